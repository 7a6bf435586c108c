//! The serving side as the watchdog sees it ([`Watched`]): the calls the serving threads' slots
//! show, the slow ones that ended, the requests waiting in servers in service, how the threads
//! stand and which handler an opcode has. Serving implements the interface observing defines, so
//! that observing never reaches up into serving.

use std::sync::Arc;

use super::server::RpcServer;
use super::{registry, threads};
use crate::rpc::calls;
use crate::rpc::observing::watchdog::{EndedCall, OpenCall, ServingStatus, WaitingRequest, Watched};
use crate::rpc::protocol::Owner;

/// The process's serving side, handed to the watchdog when the serving threads start.
pub struct ServingSide;

/// The one there is.
pub static SERVING: ServingSide = ServingSide;

/// A call as its slot shows it, named by the slot's address.
fn open(slot: usize, call: calls::Call) -> OpenCall {
    OpenCall {
        slot,
        serial: call.serial,
        device: call.device,
        port: call.port,
        opcode: call.opcode,
        began_ns: call.began_ns,
    }
}

impl Watched for ServingSide {
    fn open_calls(&self) -> Vec<OpenCall> {
        calls::slots()
            .into_iter()
            .filter_map(|slot| {
                let at = slot as *const calls::CallSlot as usize;
                slot.current().map(|call| open(at, call))
            })
            .collect()
    }

    fn ended_calls(&self) -> Vec<EndedCall> {
        calls::take_finished_slow()
            .into_iter()
            .map(|slow| EndedCall {
                call: open(slow.slot, slow.call),
                ended_ns: slow.ended_ns,
            })
            .collect()
    }

    fn waiting_requests(&self) -> Vec<WaitingRequest> {
        waiting_in(&registry::servers())
    }

    fn status(&self) -> ServingStatus {
        threads::status()
    }

    fn handler_name(&self, opcode: u16) -> Option<String> {
        registry::registered(opcode).map(|registered| registered.handler.name())
    }
}

/// The requests waiting in `servers`, which no thread has picked up.
pub fn waiting_in(servers: &[Arc<RpcServer>]) -> Vec<WaitingRequest> {
    let mut waiting = Vec::new();
    for server in servers {
        let Owner::Device(device) = server.owner();
        for (port, opcode, which) in server.waiting_requests() {
            waiting.push(WaitingRequest {
                device,
                port,
                opcode,
                which,
            });
        }
    }
    waiting
}
