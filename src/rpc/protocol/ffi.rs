//! Raw bindings to LLVM 19.1 libc's RPC server (`llvmlibc_rpc_server.h`), typed by hand from the
//! header. The rest of `rpc::protocol` (ports, windows) and the per-image server
//! (`rpc::serving::server`) call these.

use std::ffi::c_void;

/// `rpc_status_t`.
pub type Status = u32;
/// The call succeeded.
pub const STATUS_SUCCESS: Status = 0x0;
/// A generic failure.
pub const STATUS_ERROR: Status = 0x1000;
/// A port asked for an opcode with no handler; that port stays locked.
pub const STATUS_UNHANDLED_OPCODE: Status = 0x1001;
/// The lane size is not 1, 32 or 64.
pub const STATUS_INVALID_LANE_SIZE: Status = 0x1002;

/// `Ok` for a call that succeeded, else the error naming `call` and its status.
pub fn check(call: &'static str, status: Status) -> crate::util::error::Result<()> {
    if status == STATUS_SUCCESS {
        Ok(())
    } else {
        Err(crate::util::error::Error::Rpc { call, status })
    }
}

/// `rpc_port_t`: a port being served, valid only inside a callback.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Port {
    /// Opaque pointer to the server's port.
    pub handle: u64,
    /// Lanes of the device (1 for a CPU client).
    pub lane_size: u32,
}

/// `rpc_buffer_t`: one lane's 64-byte packet.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Buffer {
    /// The packet's words.
    pub data: [u64; 8],
}

/// `rpc_device_t`: a server instance.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Device {
    /// Opaque pointer to the server's state.
    pub handle: usize,
}

/// Allocates the shared buffer (and `recv_n` buffers).
pub type AllocFn = unsafe extern "C" fn(size: u64, data: *mut c_void) -> *mut c_void;
/// Frees the shared buffer.
pub type FreeFn = unsafe extern "C" fn(ptr: *mut c_void, data: *mut c_void);
/// Serves one opcode on `port`.
pub type OpcodeCallback = unsafe extern "C" fn(port: Port, data: *mut c_void);
/// Reads or fills one lane's packet.
pub type PortCallback = unsafe extern "C" fn(buffer: *mut Buffer, data: *mut c_void);

#[cfg(feature = "rpc")]
extern "C" {
    pub fn rpc_server_init(
        device: *mut Device,
        num_ports: u64,
        lane_size: u32,
        alloc: AllocFn,
        data: *mut c_void,
    ) -> Status;
    pub fn rpc_server_shutdown(device: Device, dealloc: FreeFn, data: *mut c_void) -> Status;
    pub fn rpc_handle_server(device: Device) -> Status;
    pub fn rpc_register_callback(device: Device, opcode: u16, callback: OpcodeCallback, data: *mut c_void) -> Status;
    pub fn rpc_get_client_buffer(device: Device) -> *const c_void;
    pub fn rpc_get_client_size() -> u64;
    pub fn rpc_send(port: Port, callback: PortCallback, data: *mut c_void);
    pub fn rpc_send_n(port: Port, src: *const *const c_void, size: *mut u64);
    pub fn rpc_recv(port: Port, callback: PortCallback, data: *mut c_void);
    pub fn rpc_recv_n(port: Port, dst: *mut *mut c_void, size: *mut u64, alloc: AllocFn, data: *mut c_void);
    pub fn rpc_recv_and_send(port: Port, callback: PortCallback, data: *mut c_void);
}

/// Opcodes of the 19.1 protocol that the plugin refers to.
pub mod opcode {
    /// `exit(status)` on the device.
    pub const EXIT: u16 = 1;
    /// `fwrite` to a stream that the device names.
    pub const WRITE_TO_STREAM: u16 = 4;
    /// `malloc` on the device, served by the plugin.
    pub const MALLOC: u16 = 10;
    /// `free` on the device, served by the plugin.
    pub const FREE: u16 = 11;
    /// `printf` to the host's stdout, formatted by the host.
    pub const PRINTF_TO_STDOUT: u16 = 21;
    /// `printf` to a stream that the device names.
    pub const PRINTF_TO_STREAM: u16 = 23;
    /// First opcode free for users.
    pub const FIRST_USER: u16 = 0x8000;
    /// The plugin's `printf`, formatted by the host's C library (see `rpc::printf`); below users'
    /// opcodes and far above libc's.
    pub const PRINTF: u16 = 0x7f00;
    /// The plugin's `assert` failure: the host's C library reports it and aborts (`rpc::printf`).
    pub const ASSERT_FAIL: u16 = 0x7f01;
    /// The plugin's `rpc_host_call`: a host function called with bytes the device sent, its address
    /// checked first, its result sent back (`rpc::services::host_call`). LLVM libc's own client
    /// sends its `HOST_CALL` (12), which libc's server serves as it is.
    pub const HOST_FUNCTION: u16 = 0x7f02;
    /// The plugin's `snprintf`, `sprintf` and `asprintf`: a printf request formatted by the host's C
    /// library into a buffer of the device's size, whose bytes and count go back to the device
    /// (`rpc::services::printf`).
    pub const FORMAT_TO_BUFFER: u16 = 0x7f03;
    /// The plugin's `strtod`, `strtof` and `strtold`: the text of a number whose extent the device
    /// found, converted by the host's C library, whose value's bits, characters read and `errno` go
    /// back (`rpc::services::strtod`), so that the device gets glibc's correctly rounded results.
    pub const STRTOD: u16 = 0x7f04;
    /// The plugin's `sscanf`, `fscanf` and `scanf`: a format and an input string (or a stream the
    /// device names) parsed by the host's C library, whose result and stored bytes go back to the
    /// device's pointers (`rpc::services::scan`), so that the device gets glibc's results.
    pub const SCAN: u16 = 0x7f05;
    /// The plugin's `getenv`: a name the device sent, looked up by the host's C library in the
    /// process's environment, whose value (or its absence) goes back (`rpc::services::getenv`).
    pub const GETENV: u16 = 0x7f06;

    /// Whether libc's server handles `op` itself (such opcodes cannot be overridden).
    pub fn is_built_in(op: u16) -> bool {
        usize::from(op) < NAMES.len() && op != MALLOC && op != FREE
    }

    /// The names of `rpc_opcode_t` in LLVM libc 19.1 (`rpc_opcodes_t.h`) without their `RPC_` prefix,
    /// indexed by opcode. `RPC_LAST` (0xFFFF) is left out: it only fixes the enum's width, and 0xFFFF
    /// is a user's opcode.
    const NAMES: [&str; 28] = [
        "NOOP",
        "EXIT",
        "WRITE_TO_STDOUT",
        "WRITE_TO_STDERR",
        "WRITE_TO_STREAM",
        "WRITE_TO_STDOUT_NEWLINE",
        "READ_FROM_STREAM",
        "READ_FGETS",
        "OPEN_FILE",
        "CLOSE_FILE",
        "MALLOC",
        "FREE",
        "HOST_CALL",
        "ABORT",
        "FEOF",
        "FERROR",
        "CLEARERR",
        "FSEEK",
        "FTELL",
        "FFLUSH",
        "UNGETC",
        "PRINTF_TO_STDOUT",
        "PRINTF_TO_STDERR",
        "PRINTF_TO_STREAM",
        "PRINTF_TO_STDOUT_PACKED",
        "PRINTF_TO_STDERR_PACKED",
        "PRINTF_TO_STREAM_PACKED",
        "REMOVE",
    ];

    /// How statistics, traces and the watchdog name an opcode: libc's name (`PRINTF_TO_STREAM`),
    /// `user 0x8001` for users' opcodes, or `opcode 0x0063` for one that nobody defines.
    #[derive(Clone, Copy, Debug)]
    pub struct Label(pub u16);

    impl std::fmt::Display for Label {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let op = self.0;
            match name(op) {
                Some(name) => f.write_str(name),
                None if op >= FIRST_USER => write!(f, "user {op:#06x}"),
                None => write!(f, "opcode {op:#06x}"),
            }
        }
    }

    /// libc's name of opcode `op` (`PRINTF_TO_STREAM`), or the plugin's for its own (`PRINTF`), so that
    /// statistics and traces say which host service the device asked for; `None` for opcodes neither
    /// defines (users' among them).
    pub fn name(op: u16) -> Option<&'static str> {
        match op {
            PRINTF => Some("PRINTF"),
            ASSERT_FAIL => Some("ASSERT_FAIL"),
            HOST_FUNCTION => Some("HOST_FUNCTION"),
            FORMAT_TO_BUFFER => Some("FORMAT_TO_BUFFER"),
            STRTOD => Some("STRTOD"),
            SCAN => Some("SCAN"),
            GETENV => Some("GETENV"),
            _ => NAMES.get(usize::from(op)).copied(),
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn names_follow_libc_and_the_constants() {
            assert_eq!(name(0), Some("NOOP"));
            assert_eq!(name(EXIT), Some("EXIT"));
            assert_eq!(name(MALLOC), Some("MALLOC"));
            assert_eq!(name(FREE), Some("FREE"));
            assert_eq!(name(12), Some("HOST_CALL"));
            assert_eq!(name(PRINTF_TO_STDOUT), Some("PRINTF_TO_STDOUT"));
            assert_eq!(name(PRINTF_TO_STREAM), Some("PRINTF_TO_STREAM"));
            assert_eq!(name(27), Some("REMOVE"));
            assert_eq!(name(28), None);
            assert_eq!(name(FIRST_USER), None);
            assert_eq!(name(0xFFFF), None, "RPC_LAST is no opcode");
            assert_eq!(name(PRINTF), Some("PRINTF"), "the plugin's own");
            assert_eq!(name(FORMAT_TO_BUFFER), Some("FORMAT_TO_BUFFER"), "the plugin's own");
            assert_eq!(name(STRTOD), Some("STRTOD"), "the plugin's own");
            assert_eq!(name(SCAN), Some("SCAN"), "the plugin's own");
            assert_eq!(name(GETENV), Some("GETENV"), "the plugin's own");
        }

        #[test]
        fn libc_serves_every_named_opcode_but_the_heap() {
            for op in 0..=u16::MAX {
                let served_by_libc = op <= 27 && op != MALLOC && op != FREE;
                assert_eq!(is_built_in(op), served_by_libc, "opcode {op}");
            }
        }
    }
}
