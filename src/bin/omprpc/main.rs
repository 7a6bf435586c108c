//! The `omprpc` command: run a program through omprpc without installing it, see what omprpc finds on
//! this machine, and install or take back the plugin under libomptarget 16's stock names.

mod info;
mod install;
mod layout;
mod run;
mod trace;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// omprpc: LLVM OpenMP offloading (libomptarget 16) with host services for device code.
#[derive(Parser)]
#[command(name = "omprpc", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    verb: Verb,
}

#[derive(Subcommand)]
enum Verb {
    /// Run PROG with omprpc as its host, CUDA and AMDGPU plugin, changing nothing on the system. Its
    /// exit status and signals are the program's own.
    #[command(override_usage = "omprpc run PROG [ARGS]...")]
    Run {
        /// The program to run, then its arguments, passed as they are (options included: all that
        /// follows PROG is the program's).
        #[arg(
            value_name = "PROG",
            required = true,
            num_args = 1..,
            trailing_var_arg = true,
            allow_hyphen_values = true
        )]
        command: Vec<OsString>,
    },
    /// Show the devices a program run through omprpc sees, and for each backend why it has them:
    /// driver library, GPUs, libomptarget, device library, host services. Exits 0 when something is
    /// usable.
    Info {
        #[command(flatten)]
        root: Root,
    },
    /// Put omprpc under the stock plugin names: for you (--user, the default; prints the line for
    /// your shell's profile) or for every program on the machine (--system; the stock plugins are
    /// kept aside for `uninstall`).
    Install {
        #[command(flatten)]
        scope: ScopeArgs,
    },
    /// Take back what `install` put in place (the stock plugins come back byte for byte); refuses,
    /// changing nothing, when the files are not the ones it installed.
    Uninstall {
        #[command(flatten)]
        scope: ScopeArgs,
    },
    /// Draw a trace written with OMPRPC_TRACE as an SVG picture, the tracks Perfetto shows: per device
    /// its kernels and each port's host calls, coloured by opcode.
    Trace {
        /// The trace file (OMPRPC_TRACE=TRACE.json).
        #[arg(value_name = "TRACE.json")]
        trace: PathBuf,
        /// The picture to write.
        #[arg(value_name = "PICTURE.svg")]
        picture: PathBuf,
        /// The picture's title (default: the trace's path).
        #[arg(long)]
        title: Option<String>,
    },
}

/// Where the system is: `/` but for packagers and tests.
#[derive(Args)]
struct Root {
    /// Act on the system below DIR instead of `/`.
    #[arg(long, value_name = "DIR", default_value = "/")]
    root: PathBuf,
}

#[derive(Args)]
struct ScopeArgs {
    /// For your own programs: ~/.local/lib/omprpc (the default).
    #[arg(long, conflicts_with = "system")]
    user: bool,
    /// For every program on the machine: over libomptarget 16's stock plugins (needs root).
    #[arg(long)]
    system: bool,
    #[command(flatten)]
    root: Root,
}

impl ScopeArgs {
    fn scope(&self) -> install::Scope {
        if self.system {
            install::Scope::System
        } else {
            install::Scope::User
        }
    }
}

fn main() -> ExitCode {
    let outcome = match Cli::parse().verb {
        Verb::Run { command } => {
            eprintln!("omprpc: {}", run::run(&command[0], &command[1..]));
            // As a shell does for a program it cannot start.
            return ExitCode::from(127);
        }
        Verb::Info { root } => {
            let report = info::info(&root.root);
            println!("{}", report.text);
            return if report.usable {
                ExitCode::SUCCESS
            } else {
                eprintln!(
                    "omprpc: nothing usable: no backend has a device, or programs cannot load omprpc (see above)"
                );
                ExitCode::FAILURE
            };
        }
        Verb::Install { scope } => install::install(scope.scope(), &scope.root.root),
        Verb::Uninstall { scope } => install::uninstall(scope.scope(), &scope.root.root),
        Verb::Trace { trace, picture, title } => trace::draw(&trace, &picture, title.as_deref()),
    };
    match outcome {
        Ok(message) => {
            println!("{message}");
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!("omprpc: {failure}");
            ExitCode::FAILURE
        }
    }
}
