//! Serving host calls: a device's server and its ports, the registry of servers and handlers, the
//! serving threads, and the record of the calls being served.

pub mod calls;
pub mod handlers;
pub mod registry;
pub mod server;
pub mod threads;
