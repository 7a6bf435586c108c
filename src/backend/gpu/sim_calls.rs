//! What every simulated driver of the tests records of the calls made into it: how many of each, in
//! what order, and one failure armed for the next call of a given name, so that fault handling is
//! tested call by call the same way for every driver.

use std::collections::HashMap;

/// The calls a simulated driver saw; `S` is its status type (`CUresult`, `hsa_status_t`).
pub struct CallRecord<S> {
    /// Calls per entry point.
    pub calls: HashMap<&'static str, usize>,
    /// Every call, in order.
    pub log: Vec<&'static str>,
    /// The next call of this name fails with this status.
    fail: Option<(&'static str, S)>,
}

impl<S> Default for CallRecord<S> {
    fn default() -> Self {
        CallRecord {
            calls: HashMap::new(),
            log: Vec::new(),
            fail: None,
        }
    }
}

impl<S: Copy> CallRecord<S> {
    /// Counts and logs `call`; fails it with the armed status when one is armed for it.
    pub fn enter(&mut self, call: &'static str) -> Result<(), S> {
        *self.calls.entry(call).or_default() += 1;
        self.log.push(call);
        match self.fail {
            Some((armed, status)) if armed == call => {
                self.fail = None;
                Err(status)
            }
            _ => Ok(()),
        }
    }

    /// Makes the next call of `call` fail with `status` (once).
    pub fn arm(&mut self, call: &'static str, status: S) {
        self.fail = Some((call, status));
    }

    /// How many times `call` was made.
    pub fn count(&self, call: &str) -> usize {
        self.calls.get(call).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_armed_call_fails_once_and_every_call_is_counted_in_order() {
        let mut record = super::CallRecord::<i32>::default();
        record.arm("b", 7);
        assert_eq!(record.enter("a"), Ok(()));
        assert_eq!(record.enter("b"), Err(7));
        assert_eq!(record.enter("b"), Ok(()));
        assert_eq!((record.count("a"), record.count("b"), record.count("c")), (1, 2, 0));
        assert_eq!(record.log, ["a", "b", "b"]);
    }
}
