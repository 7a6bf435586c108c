//! `backend::amdgpu::code_object`: an AMDGPU code object's target (ELF header) and kernel metadata
//! (the msgpack `NT_AMDGPU_METADATA` note), target-id strings as libomptarget and the runtime write
//! them, and the rule that decides which agents run an image.
#![no_main]

mod leak_check;

#[global_allocator]
static ALLOCATOR: leak_check::Counting = leak_check::Counting;

use libfuzzer_sys::fuzz_target;
use omprpc::backend::amdgpu::code_object::{self, TargetId, EM_AMDGPU};
use omprpc::util::elf;

/// Agents the rule is checked against: what ROCm reports for the GPUs clang 16 targets.
const AGENTS: [&str; 6] = [
    "amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-",
    "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-",
    "amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+",
    "amdgcn-amd-amdhsa--gfx940:sramecc+:xnack-",
    "amdgcn-amd-amdhsa--gfx1030",
    "amdgcn-amd-amdhsa--gfx1100",
];

fuzz_target!(|data: &[u8]| leak_check::run(data, one_input));

fn check_target(target: &TargetId) {
    // Printing and parsing again gives the same target, and a target runs on itself.
    assert_eq!(TargetId::parse(&target.to_string()).as_ref(), Some(target), "{target}");
    assert!(target.runs_on(target), "{target}");
    for agent in AGENTS.iter().filter_map(|a| TargetId::parse(a)) {
        if target.runs_on(&agent) {
            assert!(target.processor.contains(agent.processor.as_str()));
            assert!(target.xnack.is_none() || target.xnack == agent.xnack);
            assert!(target.sramecc.is_none() || target.sramecc == agent.sramecc);
        }
    }
}

/// Checks one input (see the header comment).
fn one_input(data: &[u8]) {
    match code_object::read(data) {
        Ok(read) => {
            let header = elf::header(data).expect("a code object has an ELF header");
            assert_eq!(header.machine, EM_AMDGPU);
            assert_eq!(TargetId::from_header(&header).as_ref(), Some(&read.target));
            check_target(&read.target);
            for kernel in &read.kernels {
                assert!(!kernel.name.is_empty() || kernel.symbol.is_empty() || !kernel.symbol.is_empty());
            }
        }
        Err(why) => assert!(!why.is_empty() && !why.contains('\n'), "{why:?}"),
    }
    assert_eq!(
        code_object::is_code_object(data),
        elf::header(data).is_some_and(|h| h.machine == EM_AMDGPU)
    );
    // The metadata reader on raw msgpack.
    if let Err(why) = code_object::kernels_of(data) {
        assert!(!why.is_empty() && !why.contains('\n'), "{why:?}");
    }
    // Target ids as libomptarget's arch string carries them: the whole input, and its words.
    let text = String::from_utf8_lossy(data);
    for word in std::iter::once(text.as_ref()).chain(text.split_whitespace().take(8)) {
        if let Some(target) = TargetId::parse(word) {
            check_target(&target);
        }
    }
}
