//! Whether one device reaches another's memory directly, asked of the driver (and enabled) once per
//! pair and forgotten when the device is released, as the stock plugins cache it.

use std::sync::Mutex;

use crate::util::error::Result;
use crate::util::sync::lock;

/// One device's answers towards every device: `None` until first asked.
pub struct PeerAccess {
    known: Mutex<Vec<Option<bool>>>,
}

impl PeerAccess {
    /// Nothing known yet towards any of `devices` devices.
    pub fn new(devices: usize) -> PeerAccess {
        PeerAccess {
            known: Mutex::new(vec![None; devices]),
        }
    }

    /// The answer towards `peer`, deciding it with `decide` the first time (an error is not kept, so
    /// the next call asks again). Calls for one device are serialised, so `decide` runs once.
    pub fn get_or_decide(&self, peer: usize, decide: impl FnOnce() -> Result<bool>) -> Result<bool> {
        let mut known = lock(&self.known);
        if let Some(answer) = known[peer] {
            return Ok(answer);
        }
        let answer = decide()?;
        known[peer] = Some(answer);
        Ok(answer)
    }

    /// Forgets every answer (the device was released; access must be enabled again).
    pub fn forget(&self) {
        lock(&self.known).iter_mut().for_each(|answer| *answer = None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decided_once_until_forgotten_and_errors_are_not_kept() {
        let peers = PeerAccess::new(3);
        let mut asked = 0;
        for _ in 0..3 {
            assert!(peers
                .get_or_decide(2, || {
                    asked += 1;
                    Ok(true)
                })
                .unwrap());
        }
        assert_eq!(asked, 1);
        assert!(peers
            .get_or_decide(1, || Err(crate::util::error::Error::Unsupported("no".into())))
            .is_err());
        assert!(!peers.get_or_decide(1, || Ok(false)).unwrap());
        peers.forget();
        assert!(!peers.get_or_decide(2, || Ok(false)).unwrap());
    }
}
