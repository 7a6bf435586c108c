//! The serving thread's rehearsals (`omprpc::rpc::serving::rehearsal`), which keep the serving path in the
//! caches during a lull: they run while a kernel that may call the host runs and nothing comes, and
//! never while no such kernel runs. A process of its own, so that no other test's kernels start them.
#![cfg(feature = "rpc")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use omprpc::rpc::serving::rehearsal::{rehearsals, REHEARSE_EVERY};
use omprpc::rpc::serving::server::RpcServer;
use omprpc::rpc::serving::{registry, threads};
use omprpc::rpc::HostMemory;

/// Waits up to 10 s for `cond`.
fn eventually(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn rehearsals_run_only_while_a_kernel_that_may_call_the_host_runs() {
    let server = RpcServer::new(0, 16, 32, Arc::new(HostMemory)).unwrap();
    threads::put_in_service(Arc::clone(&server)).unwrap();
    let quiet = 40 * REHEARSE_EVERY;

    let before = rehearsals();
    std::thread::sleep(quiet);
    assert_eq!(rehearsals(), before, "no kernel runs: the serving thread sleeps");

    threads::kernel_started().unwrap();
    eventually("rehearsals while a kernel runs and calls nothing", || {
        rehearsals() >= before + 10
    });
    threads::kernels_finished(1);

    // The scanner notices within one round; after that nothing more.
    std::thread::sleep(Duration::from_millis(20));
    let after = rehearsals();
    std::thread::sleep(quiet);
    assert_eq!(rehearsals(), after, "no kernel runs any more: no rehearsals");

    registry::remove_server(&server).unwrap();
    server.shutdown().unwrap();
}
