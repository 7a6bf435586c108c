//! Opening a driver library at run time (so that the plugin loads, and reports zero devices, on a
//! machine without it) and resolving a typed table of its entry points, with an error that names the
//! library or the missing symbol.

use libloading::os::unix::Library;

/// Why a driver library could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// No file of these names could be loaded (the loader's message for the last one).
    Library(String),
    /// The library lacks an entry point the plugin needs.
    Symbol {
        /// The file that loaded.
        library: String,
        /// The first entry point it lacks.
        symbol: &'static str,
    },
}

/// A driver's entry points and the file they came from. The library stays loaded for the life of the
/// process: libomptarget may call the plugin until exit, and drivers do not survive being unloaded.
pub struct Opened<T> {
    /// The resolved table.
    pub functions: T,
    /// The file it came from, for messages ("libcuda.so.1", a simulated driver's name).
    pub library: String,
}

/// Opens the first of `candidates` that loads, and resolves its table with `resolve` (which returns
/// the name of the first entry point it cannot find). A library that loads but lacks an entry point
/// ends the search: a later name would be an older copy of the same driver.
pub fn open_first<T>(
    candidates: &[&str],
    resolve: impl Fn(&Library) -> Result<T, &'static str>,
) -> Result<Opened<T>, OpenError> {
    let mut last = OpenError::Library("no library name given".into());
    for path in candidates {
        // SAFETY: loading a driver library runs its initialisers, which have no preconditions.
        let library = match unsafe { Library::open(Some(path), libc::RTLD_NOW | libc::RTLD_LOCAL) } {
            Ok(library) => library,
            Err(e) => {
                last = OpenError::Library(e.to_string());
                continue;
            }
        };
        let functions = resolve(&library).map_err(|symbol| OpenError::Symbol {
            library: path.to_string(),
            symbol,
        })?;
        // The library stays loaded: its functions are used until the process ends.
        std::mem::forget(library);
        return Ok(Opened {
            functions,
            library: path.to_string(),
        });
    }
    Err(last)
}

/// Opens a GPU driver library for the life of the process: the file a setting names (`chosen`), else
/// the first of `defaults` that loads. A failure is the one-line reason the backend reports zero
/// devices, naming `what` ("CUDA driver", "HSA runtime") and the library or the missing entry point.
pub fn open_driver<T>(
    chosen: Option<&str>,
    defaults: &[&str],
    what: &str,
    resolve: impl Fn(&Library) -> Result<T, &'static str>,
) -> crate::util::error::Result<&'static Opened<T>> {
    use crate::util::error::Error;
    let names: Vec<&str> = chosen.map_or_else(|| defaults.to_vec(), |path| vec![path]);
    match open_first(&names, resolve) {
        Ok(opened) => Ok(Box::leak(Box::new(opened))),
        Err(OpenError::Library(why)) => Err(Error::Unsupported(format!(
            "no {what}: cannot load {} ({why}); reporting 0 devices",
            names.join(" or ")
        ))),
        Err(OpenError::Symbol { library, symbol }) => Err(Error::Unsupported(format!(
            "the {what} {library} lacks {symbol} (too old?); reporting 0 devices"
        ))),
    }
}

/// Fills a table of entry points (a struct with one `unsafe extern "C" fn` field per entry point, named
/// as the C symbol) from a [`Library`], returning the first missing symbol's name as the error:
/// `resolve_table!(library, Functions { cuInit, cuDeviceGet })`. Every field's type must be the entry
/// point's C signature, which is what the caller vouches for.
macro_rules! resolve_table {
    ($library:expr, $table:ident { $($name:ident),* $(,)? }) => {
        (|| -> ::std::result::Result<$table, &'static str> {
            Ok($table {
                $($name: {
                    let symbol = concat!(stringify!($name), "\0").as_bytes();
                    // SAFETY: the field's type is the entry point's C signature, as the table's
                    // definition documents.
                    match unsafe { $library.get(symbol) } {
                        Ok(f) => *f,
                        Err(_) => return Err(stringify!($name)),
                    }
                },)*
            })
        })()
    };
}
pub(crate) use resolve_table;

/// Declares a driver library's table of entry points from one list that names each entry point once,
/// as its C symbol with its C signature (as LLVM's `DLWRAP` lists do), and builds from it everything
/// that needs the list: the table (one `unsafe extern "C" fn` field per entry point, `Copy`), its
/// `NAMES` and `RETURNS` (each entry point's return type as written, empty for none), its `resolve`
/// from a [`Library`] (naming the first missing symbol), and `$in_scope!()`, which makes the table of
/// the functions of the same names in the scope it is used in (a simulated driver's).
macro_rules! entry_points {
    (
        $(#[$meta:meta])*
        pub struct $table:ident, from the scope by $in_scope:ident;
        $( $name:ident: fn($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?; )*
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy)]
        #[allow(missing_docs, non_snake_case)]
        pub struct $table {
            $( pub $name: unsafe extern "C" fn($($arg: $ty),*) $(-> $ret)?, )*
        }

        impl $table {
            /// Every entry point, in the list's order.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),*];
            /// Every entry point with its return type as the list writes it (empty when it returns
            /// nothing).
            pub const RETURNS: &'static [(&'static str, &'static str)] =
                &[$((stringify!($name), stringify!($($ret)?))),*];

            /// Resolves every entry point in `library`, or names the first one it lacks (so a library
            /// too old, or not the one expected, is reported by what is missing). The pointers are
            /// valid only while `library` stays loaded; the caller keeps it open while it uses them.
            pub fn resolve(library: &::libloading::os::unix::Library) -> Result<$table, &'static str> {
                // Every field's type is the entry point's C signature, as the list says.
                $crate::backend::gpu::library::resolve_table!(library, $table { $($name),* })
            }
        }

        /// The table of the functions named as the entry points in the scope where it is used.
        #[allow(unused_macros)]
        macro_rules! $in_scope {
            () => {
                $table { $($name),* }
            };
        }
        #[allow(unused_imports)]
        pub(crate) use $in_scope;
    };
}
pub(crate) use entry_points;

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(non_snake_case)]
    struct Table {
        getpid: unsafe extern "C" fn() -> libc::pid_t,
    }

    #[allow(non_snake_case)]
    struct Missing {
        getpid: unsafe extern "C" fn() -> libc::pid_t,
        omprpc_no_such_symbol: unsafe extern "C" fn(),
    }

    #[test]
    fn resolves_a_table_from_the_first_library_that_loads() {
        let opened = open_first(&["libomprpc-absent.so", "libc.so.6"], |library| {
            resolve_table!(library, Table { getpid })
        })
        .unwrap();
        assert_eq!(opened.library, "libc.so.6");
        assert_eq!(
            // SAFETY: getpid has no preconditions.
            unsafe { (opened.functions.getpid)() },
            std::process::id() as libc::pid_t
        );
    }

    #[test]
    fn names_the_missing_library_or_symbol() {
        match open_first(&["libomprpc-absent.so"], |library| {
            resolve_table!(library, Table { getpid })
        }) {
            Err(OpenError::Library(why)) => assert!(why.contains("libomprpc-absent.so"), "{why}"),
            _ => panic!("an absent library opened"),
        }
        match open_first(&["libc.so.6"], |library| {
            resolve_table!(
                library,
                Missing {
                    getpid,
                    omprpc_no_such_symbol
                }
            )
            .map(|t| (t.getpid, t.omprpc_no_such_symbol))
        }) {
            Err(OpenError::Symbol { library, symbol }) => {
                assert_eq!((library.as_str(), symbol), ("libc.so.6", "omprpc_no_such_symbol"))
            }
            _ => panic!("a missing symbol resolved"),
        }
    }

    entry_points! {
        /// Two entry points of the C library, to try the list out.
        pub struct Listed, from the scope by listed_in_scope;
        getpid: fn() -> libc::pid_t;
        free: fn(ptr: *mut std::ffi::c_void);
    }

    #[test]
    fn one_list_gives_the_table_its_names_and_both_ways_to_fill_it() {
        assert_eq!(Listed::NAMES, &["getpid", "free"]);
        assert_eq!(Listed::RETURNS, &[("getpid", "libc::pid_t"), ("free", "")]);
        let opened = open_first(&["libc.so.6"], Listed::resolve).unwrap();
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { (opened.functions.getpid)() };
        assert_eq!(pid, std::process::id() as libc::pid_t);
        // A simulated library: functions of the entry points' names in scope.
        unsafe extern "C" fn getpid() -> libc::pid_t {
            -7
        }
        unsafe extern "C" fn free(_ptr: *mut std::ffi::c_void) {}
        let simulated = listed_in_scope!();
        // SAFETY: the function above has no preconditions.
        assert_eq!(unsafe { (simulated.getpid)() }, -7);
        // SAFETY: free of NULL does nothing.
        unsafe { (simulated.free)(std::ptr::null_mut()) };
    }
}
