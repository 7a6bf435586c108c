//! Host services for device code: calls that code on a device makes to the host (`printf`, files,
//! `malloc`, `exit`, a user's own handlers), carried over the shared-memory protocol of LLVM libc
//! 19.1 and served by libc's own server through FFI. This module offers safe operations only; the
//! C-callable side of user handlers lives in the ABI layer.
//!
//! # One call, from the mailbox to the handler and back
//!
//! 1. **The server is set up with the image.** A device image that wants host services defines
//!    `__llvm_libc_rpc_client`. When it is loaded, `plugin::rpc_link` makes it a
//!    [`serving::server::RpcServer`] of its own: libc's server ([`protocol::ffi`]) with its mailbox
//!    in memory both sides see ([`DeviceMemory`]), the device's heap ([`services::heap`]) and the
//!    callbacks of every opcode. It copies the server's client object into the image and puts the
//!    server in service ([`serving::threads::put_in_service`], which adds it to
//!    [`serving::registry`] with every registered user handler).
//! 2. **The device asks.** Its leader lane takes a free port of the mailbox, writes the active lanes,
//!    the opcode and a packet per lane, and flips its word ([`protocol::mailbox`] describes the
//!    layout; [`protocol::client`] plays this side for tests).
//! 3. **A serving thread notices.** While a kernel that may call the host runs, the scanner of
//!    [`serving::threads`] asks each server to serve once (sleeping between looks once a lull has
//!    lasted a while, until device code rings the [`crate::util::doorbell`] or a short nap ends):
//!    the server finds the ports whose two words differ
//!    ([`protocol::mailbox::Mailbox::holds_request`]), claims that port's window
//!    ([`protocol::window`], a one-port view of libc's server) and runs libc's `rpc_handle_server`
//!    on it. The call is shown in the thread's slot ([`calls`]), where a stand-by thread
//!    takes over the scan from a call that holds it up, and the watchdog looks.
//! 4. **libc's server carries out the opcode.** For the plugin's callbacks, in [`services`]: MALLOC
//!    and FREE from the device's heap, PRINTF (and FORMAT_TO_BUFFER, `snprintf`) through the host's
//!    C library, ASSERT. For the C
//!    streams and EXIT, libc's server calls the C library itself, and the plugin's link (`--wrap`,
//!    `build.rs`) routes those calls through [`services::streams`] (only streams the device has open
//!    reach the C library) and [`services::exit`]. A user opcode goes to
//!    `serving::handlers::dispatch`, which runs the registered handler (one call of an opcode at a
//!    time) with a [`protocol::port::Port`].
//! 5. **The handler answers.** It receives the lanes' packets or byte strings and replies through
//!    the `Port`; libc writes the reply and flips the server's word, and the device's call returns.
//! 6. **The call is reported.** The server and the thread's call slot ([`calls`]) report
//!    it as it ends to [`observing`]: the statistics, the trace and the watchdog's view, reported at
//!    exit ([`observing::report_at_exit`]).
//!
//! When the kernel ends, the thread that waited for it serves what the kernel left behind on its
//! device's servers (a last `free`, which the device does not wait for) before the region is reported
//! done; a device that
//! faults in the middle of a call has the calls it was making answered for it
//! ([`serving::server::RpcServer::answer_for_lost_device`]).
//!
//! The folders are layers that only point down (`tests/module_layout.rs` checks it, and that no
//! file of them forms an import circle): [`protocol`] at the bottom (libc's binding, the mailbox,
//! the device's memory, the window, the port, the client), knowing nothing above it; [`calls`] (the
//! record of the calls being served); [`observing`] (statistics, trace, watchdog), to which calls
//! are reported and which learns of the serving threads only through the interface it defines
//! ([`observing::watchdog::Watched`]); [`services`] (what the plugin's own opcodes do); [`serving`]
//! (servers, threads, handlers); and the front door ([`HostServices`]), which this root re-exports
//! with the types it speaks in. `simulated` plays devices in tests.

#[cfg(feature = "rpc")]
pub mod calls;
mod host_services;
pub mod observing;
pub mod protocol;
#[cfg(feature = "rpc")]
pub mod services;
#[cfg(feature = "rpc")]
pub mod serving;
#[cfg(all(feature = "rpc", any(test, feature = "test-doubles")))]
pub mod simulated;

pub use host_services::{DeviceHeap, HostServices, ImageServer, TracedKernel};
pub use protocol::memory::{DeviceMemory, HostMemory};
/// What a user handler is and sees (the C API's handlers are built on these).
#[cfg(feature = "rpc")]
pub use protocol::port::{Packet, Port};
pub use protocol::CLIENT_SYMBOL;
#[cfg(feature = "rpc")]
pub use serving::handlers::UserHandler;

/// Whether this build serves host services (the `rpc` cargo feature).
pub const AVAILABLE: bool = cfg!(feature = "rpc");
