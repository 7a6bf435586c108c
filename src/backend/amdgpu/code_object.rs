//! What an AMDGPU code object says about itself, read without trusting it: the target it was built
//! for (from libomptarget's arch string, else the ELF header's `e_flags`), whether that target runs on
//! an agent by the stock plugin's target-id rule, and each kernel's metadata from the msgpack
//! `NT_AMDGPU_METADATA` note (code object v3 and later): kernarg segment size and alignment, group and
//! private segment sizes, wavefront size. A malformed image yields an error that says what is wrong,
//! never a panic.

use rmpv::Value;

use crate::util::elf;

/// `e_machine` of an AMDGPU code object.
pub const EM_AMDGPU: u16 = elf::EM_AMDGPU;
/// `e_ident[EI_OSABI]` of an HSA code object.
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// The note type of code object v3+ metadata, under owner "AMDGPU".
pub const NT_AMDGPU_METADATA: u32 = 32;

/// `e_flags` mask of the processor.
const EF_AMDGPU_MACH: u32 = 0xff;
/// Processors by their `EF_AMDGPU_MACH_AMDGCN_*` value: LLVM 16's `BinaryFormat/ELF.h`, then those
/// later LLVMs added (AMDGPUUsage's processor table), generic ones included, so that an image built
/// by a newer clang for an MI300 or an RDNA3/4 part is named and judged rather than refused.
const PROCESSORS: &[(u32, &str)] = &[
    (0x020, "gfx600"),
    (0x021, "gfx601"),
    (0x022, "gfx700"),
    (0x023, "gfx701"),
    (0x024, "gfx702"),
    (0x025, "gfx703"),
    (0x026, "gfx704"),
    (0x028, "gfx801"),
    (0x029, "gfx802"),
    (0x02a, "gfx803"),
    (0x02b, "gfx810"),
    (0x02c, "gfx900"),
    (0x02d, "gfx902"),
    (0x02e, "gfx904"),
    (0x02f, "gfx906"),
    (0x030, "gfx908"),
    (0x031, "gfx909"),
    (0x032, "gfx90c"),
    (0x033, "gfx1010"),
    (0x034, "gfx1011"),
    (0x035, "gfx1012"),
    (0x036, "gfx1030"),
    (0x037, "gfx1031"),
    (0x038, "gfx1032"),
    (0x039, "gfx1033"),
    (0x03a, "gfx602"),
    (0x03b, "gfx705"),
    (0x03c, "gfx805"),
    (0x03d, "gfx1035"),
    (0x03e, "gfx1034"),
    (0x03f, "gfx90a"),
    (0x040, "gfx940"),
    (0x041, "gfx1100"),
    (0x042, "gfx1013"),
    (0x044, "gfx1103"),
    (0x045, "gfx1036"),
    (0x046, "gfx1101"),
    (0x047, "gfx1102"),
    (0x043, "gfx1150"),
    (0x048, "gfx1200"),
    (0x04a, "gfx1151"),
    (0x04b, "gfx941"),
    (0x04c, "gfx942"),
    (0x04e, "gfx1201"),
    (0x04f, "gfx950"),
    (0x051, "gfx9-generic"),
    (0x052, "gfx10-1-generic"),
    (0x053, "gfx10-3-generic"),
    (0x054, "gfx11-generic"),
    (0x055, "gfx1152"),
    (0x058, "gfx1153"),
    (0x059, "gfx12-generic"),
    (0x05f, "gfx9-4-generic"),
];
/// `e_ident[EI_ABIVERSION]` of code object v3, whose feature bits are single flags.
const ABI_V3: u8 = 1;
const EF_XNACK_V3: u32 = 0x100;
const EF_SRAMECC_V3: u32 = 0x200;
/// Code object v4 and later: two bits per feature (unsupported, any, off, on).
const EF_XNACK_V4: u32 = 0x300;
const EF_SRAMECC_V4: u32 = 0xc00;

/// A target id such as `gfx90a:sramecc+:xnack-`: a processor and the features it fixes. A feature
/// left out (`None`) is "any": the code runs whichever way the device is set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetId {
    /// The processor, e.g. "gfx90a".
    pub processor: String,
    /// `sramecc+` / `sramecc-`.
    pub sramecc: Option<bool>,
    /// `xnack+` / `xnack-`.
    pub xnack: Option<bool>,
}

impl TargetId {
    /// Reads a target id as libomptarget's arch string (`gfx90a:xnack+`) or an agent's ISA name
    /// (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`) writes it, by the stock plugin's rule: the
    /// processor before the first colon, and a feature wherever its `+` or `-` form appears after it.
    pub fn parse(text: &str) -> Option<TargetId> {
        let text = text
            .strip_prefix("amdgcn-amd-amdhsa")
            .map(|rest| rest.trim_start_matches('-'))
            .unwrap_or(text);
        let (processor, features) = text.split_once(':').unwrap_or((text, ""));
        // A processor is a name like "gfx90a", or a generic one like "gfx9-4-generic"; anything else
        // names no GPU.
        let named = |b: u8| b.is_ascii_alphanumeric() || b == b'-';
        if !processor.starts_with("gfx") || !processor.bytes().all(named) {
            return None;
        }
        let feature = |name: &str| {
            if features.contains(&format!("{name}+")) {
                Some(true)
            } else if features.contains(&format!("{name}-")) {
                Some(false)
            } else {
                None
            }
        };
        Some(TargetId {
            processor: processor.to_string(),
            sramecc: feature("sramecc"),
            xnack: feature("xnack"),
        })
    }

    /// The target a code object's header names: the processor from `e_flags`' mach field, and
    /// xnack/sramecc from its feature bits as the code object version (`e_ident[EI_ABIVERSION]`)
    /// encodes them. `None` for a processor LLVM 16 does not know.
    pub fn from_header(header: &elf::Header) -> Option<TargetId> {
        let mach = header.flags & EF_AMDGPU_MACH;
        let processor = PROCESSORS.iter().find(|(m, _)| *m == mach)?.1;
        let (xnack, sramecc) = if header.abi_version == ABI_V3 {
            // v3 says only "on" or "any".
            (
                (header.flags & EF_XNACK_V3 != 0).then_some(true),
                (header.flags & EF_SRAMECC_V3 != 0).then_some(true),
            )
        } else {
            let two_bits = |bits: u32, shift: u32| match (bits >> shift) & 3 {
                2 => Some(false),
                3 => Some(true),
                _ => None, // unsupported or any
            };
            (
                two_bits(header.flags & EF_XNACK_V4, 8),
                two_bits(header.flags & EF_SRAMECC_V4, 10),
            )
        };
        Some(TargetId {
            processor: processor.to_string(),
            sramecc,
            xnack,
        })
    }

    /// Whether the processor is a generic one (`gfx9-4-generic`), which ROCm lists after an agent's
    /// own.
    pub fn is_generic(&self) -> bool {
        self.processor.ends_with("-generic")
    }

    /// Whether code built for `self` runs on an agent whose ISA is `agent`, by LLVM 16's
    /// `isImageCompatibleWithEnv`: the image's processor contains the agent's, the image fixes no more
    /// features than the agent reports, and every feature the image fixes the agent has the same way.
    pub fn runs_on(&self, agent: &TargetId) -> bool {
        let fixed = |t: &TargetId| usize::from(t.sramecc.is_some()) + usize::from(t.xnack.is_some());
        if !self.processor.contains(agent.processor.as_str()) || fixed(self) > fixed(agent) {
            return false;
        }
        let agrees = |image: Option<bool>, agent: Option<bool>| image.is_none() || image == agent;
        agrees(self.sramecc, agent.sramecc) && agrees(self.xnack, agent.xnack)
    }
}

impl std::fmt::Display for TargetId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.processor)?;
        for (name, value) in [("sramecc", self.sramecc), ("xnack", self.xnack)] {
            if let Some(on) = value {
                write!(f, ":{name}{}", if on { '+' } else { '-' })?;
            }
        }
        Ok(())
    }
}

/// One kernel as the code object's metadata describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelMetadata {
    /// The kernel's source name (`.name`).
    pub name: String,
    /// Its descriptor's symbol (`.symbol`, `<name>.kd`), by which the runtime finds it.
    pub symbol: String,
    /// Bytes of explicit (and, from v5, hidden) arguments (`.kernarg_segment_size`).
    pub kernarg_segment_size: u32,
    /// Alignment of the kernarg segment (`.kernarg_segment_align`).
    pub kernarg_segment_align: u32,
    /// Static LDS per work-group (`.group_segment_fixed_size`).
    pub group_segment_fixed_size: u32,
    /// Scratch per work-item (`.private_segment_fixed_size`).
    pub private_segment_fixed_size: u32,
    /// Work-items per wavefront the kernel was compiled for (`.wavefront_size`: 32 or 64).
    pub wavefront_size: u32,
    /// Most work-items per work-group (`.max_flat_workgroup_size`).
    pub max_flat_workgroup_size: u32,
    /// The hidden arguments its `.args` list after the explicit ones, which the launch fills: code
    /// object v5 passes the work-group size and block counts here rather than in the dispatch packet
    /// alone, so a kernel that finds zeros there runs with a work-group size of 0.
    pub hidden: Vec<HiddenArg>,
}

/// What a hidden kernel argument holds (its `.value_kind`), among those a launch fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HiddenKind {
    /// `hidden_block_count_{x,y,z}`: work-groups along the axis (0, 1, 2).
    BlockCount(u8),
    /// `hidden_group_size_{x,y,z}`: work-items per work-group along the axis.
    GroupSize(u8),
    /// `hidden_remainder_{x,y,z}`: work-items of the last, partial work-group (0: none is partial).
    Remainder(u8),
    /// `hidden_grid_dims`: dimensions of the grid.
    GridDims,
    /// `hidden_dynamic_lds_size`: dynamic group memory per work-group, in bytes.
    DynamicLdsSize,
    /// Anything else (global offsets, the heap and hostcall pointers, queue and aperture values):
    /// zero, as LLVM's plugins leave them; omprpc's host services use none of them.
    Zero,
}

/// One hidden argument: what it holds, and where and how wide it is in the kernarg segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HiddenArg {
    pub kind: HiddenKind,
    /// Byte offset in the kernarg segment.
    pub offset: u32,
    /// Bytes (2, 4 or 8).
    pub size: u32,
}

/// The launch values hidden arguments are filled from: a one-dimensional grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HiddenValues {
    pub teams: u32,
    pub threads: u32,
    pub dynamic_lds_bytes: u32,
}

impl HiddenArg {
    /// The value this argument holds for a launch of `launch`.
    pub fn value(&self, launch: HiddenValues) -> u64 {
        // Along x the launch's count; along y and z, one.
        let along = |axis: u8, x: u32| u64::from(if axis == 0 { x } else { 1 });
        match self.kind {
            HiddenKind::BlockCount(axis) => along(axis, launch.teams),
            HiddenKind::GroupSize(axis) => along(axis, launch.threads),
            HiddenKind::Remainder(_) | HiddenKind::Zero => 0,
            HiddenKind::GridDims => 1,
            HiddenKind::DynamicLdsSize => u64::from(launch.dynamic_lds_bytes),
        }
    }

    /// Writes this argument's value for `launch` into `segment` (the kernarg segment), when it lies
    /// there whole; an argument the segment cannot hold is left out.
    pub fn write(&self, segment: &mut [u8], launch: HiddenValues) {
        let (at, size) = (self.offset as usize, self.size.min(8) as usize);
        if let Some(bytes) = segment.get_mut(at..at + size) {
            bytes.copy_from_slice(&self.value(launch).to_le_bytes()[..size]);
        }
    }
}

/// What a code object says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeObject {
    /// The target of its header.
    pub target: TargetId,
    /// Its kernels, in the metadata's order (empty for a code object without the note).
    pub kernels: Vec<KernelMetadata>,
}

/// Whether `header` (an image's first bytes) starts an AMDGPU code object.
pub fn is_code_object(header: &[u8]) -> bool {
    elf::header(header).is_some_and(|h| h.machine == EM_AMDGPU)
}

/// Reads a whole code object's target and kernel metadata.
pub fn read(bytes: &[u8]) -> Result<CodeObject, String> {
    let header = elf::header(bytes).ok_or("not a 64-bit little-endian ELF file")?;
    if header.machine != EM_AMDGPU {
        return Err(format!("ELF machine {} is not AMDGPU ({EM_AMDGPU})", header.machine));
    }
    let target = TargetId::from_header(&header)
        .ok_or_else(|| format!("e_flags {:#x} name no AMDGPU processor LLVM 16 knows", header.flags))?;
    let image = elf::Image::parse(bytes).ok_or("its section headers are malformed")?;
    let kernels = match image
        .notes()
        .into_iter()
        .find(|(owner, kind, _)| *owner == b"AMDGPU" && *kind == NT_AMDGPU_METADATA)
    {
        Some((_, _, desc)) => kernels_of(desc)?,
        None => Vec::new(),
    };
    Ok(CodeObject { target, kernels })
}

/// The kernels of a metadata note's msgpack map (`amdhsa.kernels`).
pub fn kernels_of(note: &[u8]) -> Result<Vec<KernelMetadata>, String> {
    let value = rmpv::decode::read_value(&mut &note[..])
        .map_err(|e| format!("its metadata note is not valid msgpack ({e})"))?;
    let kernels = field(&value, "amdhsa.kernels")
        .ok_or("its metadata has no amdhsa.kernels")?
        .as_array()
        .ok_or("its metadata's amdhsa.kernels is not an array")?;
    kernels.iter().map(kernel_of).collect()
}

fn field<'v>(map: &'v Value, key: &str) -> Option<&'v Value> {
    map.as_map()?
        .iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
}

fn kernel_of(kernel: &Value) -> Result<KernelMetadata, String> {
    let text = |key: &str| {
        field(kernel, key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("a kernel's metadata lacks {key}"))
    };
    let name = text(".name")?;
    // The name is the image's, not to be trusted in a one-line message.
    let shown = name.escape_debug().to_string();
    let number = |key: &str, default: Option<u32>| -> Result<u32, String> {
        match field(kernel, key) {
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| format!("kernel {shown}: {key} is not a 32-bit count")),
            None => default.ok_or_else(|| format!("kernel {shown}: its metadata lacks {key}")),
        }
    };
    let hidden = match field(kernel, ".args") {
        None => Vec::new(),
        Some(args) => args
            .as_array()
            .ok_or_else(|| format!("kernel {shown}: .args is not an array"))?
            .iter()
            .filter_map(|arg| hidden_arg(arg).transpose())
            .collect::<Result<Vec<_>, String>>()
            .map_err(|e| format!("kernel {shown}: {e}"))?,
    };
    Ok(KernelMetadata {
        hidden,
        symbol: text(".symbol")?,
        kernarg_segment_size: number(".kernarg_segment_size", None)?,
        kernarg_segment_align: number(".kernarg_segment_align", None)?,
        group_segment_fixed_size: number(".group_segment_fixed_size", None)?,
        private_segment_fixed_size: number(".private_segment_fixed_size", None)?,
        wavefront_size: number(".wavefront_size", None)?,
        max_flat_workgroup_size: number(".max_flat_workgroup_size", Some(256))?,
        name,
    })
}

/// The hidden argument an `.args` entry describes, if it is one.
fn hidden_arg(arg: &Value) -> Result<Option<HiddenArg>, String> {
    let Some(kind) = field(arg, ".value_kind").and_then(Value::as_str) else {
        return Err("an argument without .value_kind".into());
    };
    let Some(hidden) = kind.strip_prefix("hidden_") else {
        return Ok(None);
    };
    let axis = |name: &str| {
        name.strip_suffix("_x")
            .map(|_| 0)
            .or(name.strip_suffix("_y").map(|_| 1))
            .or(name.strip_suffix("_z").map(|_| 2))
    };
    let kind = match hidden {
        "grid_dims" => HiddenKind::GridDims,
        "dynamic_lds_size" => HiddenKind::DynamicLdsSize,
        h if h.starts_with("block_count_") => axis(h).map_or(HiddenKind::Zero, HiddenKind::BlockCount),
        h if h.starts_with("group_size_") => axis(h).map_or(HiddenKind::Zero, HiddenKind::GroupSize),
        h if h.starts_with("remainder_") => axis(h).map_or(HiddenKind::Zero, HiddenKind::Remainder),
        _ => HiddenKind::Zero,
    };
    let number = |key: &str| {
        field(arg, key)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("argument {kind:?} lacks a 32-bit {key}"))
    };
    Ok(Some(HiddenArg {
        kind,
        offset: number(".offset")?,
        size: number(".size")?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(text: &str) -> TargetId {
        TargetId::parse(text).unwrap()
    }

    #[test]
    fn target_ids_parse_as_the_stock_plugin_reads_them() {
        assert_eq!(
            target("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"),
            TargetId {
                processor: "gfx90a".into(),
                sramecc: Some(true),
                xnack: Some(false)
            }
        );
        assert_eq!(target("gfx1030").to_string(), "gfx1030");
        assert_eq!(target("gfx90a:xnack+").to_string(), "gfx90a:xnack+");
        assert_eq!(TargetId::parse(""), None);
        assert_eq!(TargetId::parse(":xnack+"), None);
        assert_eq!(TargetId::parse("amdgcn-amd-amdhsa--amdgcn-amd-amdhsa--gfx90a"), None);
        let generic = TargetId::parse("amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-").unwrap();
        assert_eq!(
            (generic.processor.as_str(), generic.sramecc, generic.xnack),
            ("gfx9-4-generic", Some(true), Some(false))
        );
        assert!(generic.is_generic() && !TargetId::parse("gfx942").unwrap().is_generic());
        assert_eq!(TargetId::parse("sm_90"), None, "not an AMD processor");
        assert_eq!(TargetId::parse("gfx 90a"), None);
    }

    #[test]
    fn compatibility_follows_llvm_16s_rule() {
        let agent = target("gfx90a:sramecc+:xnack-");
        assert!(target("gfx90a").runs_on(&agent), "any on both");
        assert!(target("gfx90a:xnack-").runs_on(&agent));
        assert!(target("gfx90a:sramecc+:xnack-").runs_on(&agent));
        assert!(!target("gfx90a:xnack+").runs_on(&agent), "xnack differs");
        assert!(!target("gfx906").runs_on(&agent), "another processor");
        assert!(
            !target("gfx90a:xnack-").runs_on(&target("gfx90a")),
            "more features than the agent"
        );
        assert!(!target("gfx1030").runs_on(&target("gfx1100")));
        // The stock rule is a substring test: an image for gfx90a is taken by a "gfx90" agent.
        assert!(target("gfx90a").runs_on(&target("gfx90")));
    }

    fn header(flags: u32, abi_version: u8) -> elf::Header {
        elf::Header {
            os_abi: ELFOSABI_AMDGPU_HSA,
            abi_version,
            kind: 3,
            machine: EM_AMDGPU,
            flags,
            program_headers_offset: 0,
            program_header_size: 0,
            program_headers: 0,
        }
    }

    #[test]
    fn the_header_names_processor_and_features() {
        // As readelf shows clang-16's images: "0x53f, gfx90a, xnack any, sramecc any".
        assert_eq!(TargetId::from_header(&header(0x53f, 2)), Some(target("gfx90a")));
        assert_eq!(TargetId::from_header(&header(0x36, 2)), Some(target("gfx1030")));
        assert_eq!(
            TargetId::from_header(&header(0x03f | 0x300 | 0x800, 2)),
            Some(target("gfx90a:sramecc-:xnack+"))
        );
        assert_eq!(
            TargetId::from_header(&header(0x02f | 0x100, 1)),
            Some(target("gfx906:xnack+")),
            "v3: a set bit is on"
        );
        assert_eq!(TargetId::from_header(&header(0xff, 2)), None);
    }

    fn metadata(kernels: Vec<Value>) -> Vec<u8> {
        let map = Value::Map(vec![
            (Value::from("amdhsa.kernels"), Value::Array(kernels)),
            (Value::from("amdhsa.version"), Value::Array(vec![1.into(), 1.into()])),
        ]);
        let mut bytes = Vec::new();
        rmpv::encode::write_value(&mut bytes, &map).unwrap();
        bytes
    }

    fn kernel(fields: &[(&str, Value)]) -> Value {
        Value::Map(fields.iter().map(|(k, v)| (Value::from(*k), v.clone())).collect())
    }

    fn full_kernel() -> Vec<(&'static str, Value)> {
        vec![
            (".name", "k".into()),
            (".symbol", "k.kd".into()),
            (".kernarg_segment_size", 8.into()),
            (".kernarg_segment_align", 8.into()),
            (".group_segment_fixed_size", 304.into()),
            (".private_segment_fixed_size", 16400.into()),
            (".wavefront_size", 64.into()),
        ]
    }

    #[test]
    fn kernel_metadata_is_read_and_checked() {
        let kernels = kernels_of(&metadata(vec![kernel(&full_kernel())])).unwrap();
        assert_eq!(
            kernels,
            vec![KernelMetadata {
                name: "k".into(),
                symbol: "k.kd".into(),
                kernarg_segment_size: 8,
                kernarg_segment_align: 8,
                group_segment_fixed_size: 304,
                private_segment_fixed_size: 16400,
                wavefront_size: 64,
                max_flat_workgroup_size: 256,
                hidden: vec![],
            }]
        );
        let mut missing = full_kernel();
        missing.retain(|(k, _)| *k != ".wavefront_size");
        assert_eq!(
            kernels_of(&metadata(vec![kernel(&missing)])).unwrap_err(),
            "kernel k: its metadata lacks .wavefront_size"
        );
        let mut newline = full_kernel();
        newline[0].1 = Value::from("a\nb");
        newline.retain(|(k, _)| *k != ".wavefront_size");
        assert_eq!(
            kernels_of(&metadata(vec![kernel(&newline)])).unwrap_err(),
            "kernel a\\nb: its metadata lacks .wavefront_size",
            "the image's name, escaped: one line"
        );
        let mut negative = full_kernel();
        negative[2].1 = Value::from(-8);
        assert_eq!(
            kernels_of(&metadata(vec![kernel(&negative)])).unwrap_err(),
            "kernel k: .kernarg_segment_size is not a 32-bit count"
        );
        assert_eq!(
            kernels_of(&[0x81, 0xa1]).unwrap_err().split(" (").next(),
            Some("its metadata note is not valid msgpack")
        );
        assert_eq!(
            kernels_of(metadata(vec![]).split_at(3).0)
                .unwrap_err()
                .split(" (")
                .next(),
            Some("its metadata note is not valid msgpack")
        );
    }
}

#[cfg(test)]
mod real_images {
    use super::*;
    use crate::backend::amdgpu::tests::code_object;

    #[test]
    fn clang_16s_code_objects_name_their_target_and_kernels() {
        for (arch, wavefront) in [
            ("gfx906", 64),
            ("gfx90a", 64),
            ("gfx940", 64),
            ("gfx1030", 32),
            ("gfx1100", 32),
        ] {
            let image = code_object(arch);
            assert!(is_code_object(&image[..64]));
            let read = read(&image).unwrap_or_else(|e| panic!("{arch}: {e}"));
            assert_eq!(read.target.processor, arch);
            assert_eq!(read.target.xnack, None, "{arch}: built for any xnack");
            assert_eq!(read.kernels.len(), 2, "{arch}: the program's two target regions");
            for kernel in &read.kernels {
                assert!(kernel.name.starts_with("__omp_offloading_"), "{kernel:?}");
                assert_eq!(kernel.symbol, format!("{}.kd", kernel.name));
                assert_eq!(kernel.wavefront_size, wavefront, "{arch}: {kernel:?}");
                assert_eq!(kernel.kernarg_segment_align, 8);
                assert!(kernel.kernarg_segment_size >= 8, "{kernel:?}");
            }
            assert!(read
                .target
                .runs_on(&TargetId::parse(&format!("{arch}:sramecc+:xnack-")).unwrap()));
        }
    }

    #[test]
    fn truncated_and_corrupted_code_objects_are_refused_cleanly() {
        let image = code_object("gfx90a");
        for len in [0, 16, 63, 64, 100, 1000, image.len() / 2, image.len() - 1] {
            // Whatever is left must not panic; a header alone still names the target.
            let _ = read(&image[..len]);
        }
        let mut wrong_machine = image.clone();
        wrong_machine[18] = 62;
        assert_eq!(read(&wrong_machine).unwrap_err(), "ELF machine 62 is not AMDGPU (224)");
        let mut unknown = image.clone();
        unknown[48] = 0xff;
        assert!(read(&unknown).unwrap_err().contains("name no AMDGPU processor"));
        // Every byte of the metadata note flipped in turn.
        let at = image.windows(14).position(|w| w == b"amdhsa.kernels").unwrap();
        for i in at.saturating_sub(64)..(at + 600).min(image.len()) {
            let mut corrupt = image.clone();
            corrupt[i] ^= 0xff;
            let _ = read(&corrupt);
        }
    }

    #[test]
    fn hidden_arguments_are_read_from_a_v5_code_object_and_written_where_they_fit() {
        let path = format!(
            "{}/tests/data/amdgpu/hidden_args_v5-gfx90a.hsaco",
            env!("CARGO_MANIFEST_DIR")
        );
        let read = read(&std::fs::read(&path).unwrap()).unwrap();
        let hidden = &read.kernels[0].hidden;
        let at = |kind: HiddenKind| hidden.iter().find(|h| h.kind == kind).map(|h| (h.offset, h.size));
        assert_eq!(at(HiddenKind::BlockCount(0)), Some((8, 4)));
        assert_eq!(at(HiddenKind::BlockCount(2)), Some((16, 4)));
        assert_eq!(at(HiddenKind::GroupSize(0)), Some((20, 2)));
        assert_eq!(at(HiddenKind::Remainder(1)), Some((28, 2)));
        assert_eq!(at(HiddenKind::GridDims), Some((72, 2)));
        assert_eq!(
            hidden.iter().filter(|h| h.kind == HiddenKind::Zero).count(),
            3,
            "the global offsets"
        );
        let launch = HiddenValues {
            teams: 0x0102_0304,
            threads: 256,
            dynamic_lds_bytes: 64,
        };
        let mut segment = [0xaau8; 12];
        for arg in hidden {
            arg.write(&mut segment, launch);
        }
        assert_eq!(
            segment,
            [0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 4, 3, 2, 1],
            "the block count where it fits, nothing past the segment"
        );
        let lds = HiddenArg {
            kind: HiddenKind::DynamicLdsSize,
            offset: 0,
            size: 4,
        };
        assert_eq!(lds.value(launch), 64);
    }
}
