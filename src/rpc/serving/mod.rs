//! Serving host calls: a device's server and its ports, the registry of servers and handlers, the
//! serving threads, and what the watchdog sees of them.

pub mod handlers;
pub mod registry;
pub mod server;
pub mod threads;
pub mod watched;
