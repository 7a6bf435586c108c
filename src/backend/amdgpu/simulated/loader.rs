//! Executables loaded from real code objects: segments, relocations, kernel descriptors and variables, looked up by name.

use super::*;

/// Reads an ELF image's loadable segments: (file offset, address, file bytes, memory bytes).
pub(super) fn segments(bytes: &[u8], header: &elf::Header) -> Option<Vec<(usize, usize, usize, usize)>> {
    let mut found = Vec::new();
    for i in 0..usize::from(header.program_headers) {
        let at = usize::try_from(header.program_headers_offset).ok()? + i * usize::from(header.program_header_size);
        let entry = bytes.get(at..at + 56)?;
        let word = |o: usize| u64::from_le_bytes(entry[o..o + 8].try_into().expect("8 bytes")) as usize;
        if u32::from_le_bytes(entry[..4].try_into().expect("4 bytes")) == 1 {
            found.push((word(8), word(16), word(32), word(40)));
        }
    }
    Some(found)
}

pub(super) fn u32_at(memory: usize, offset: usize) -> u32 {
    // SAFETY: callers check that `offset + 4` lies inside the loaded image at `memory`.
    unsafe { ((memory + offset) as *const u32).read_unaligned() }
}

/// Loads a code object into `executable` for GPU `agent`, as the ROCm loader does: its loadable
/// segments (or, for an image without any, each symbol's bytes) into device memory, its dynamic
/// relocations applied, its kernel descriptors (`<name>.kd`) and variables made symbols.
pub(super) fn load(w: &mut World, executable: u64, agent: usize, bytes: &[u8]) -> HsaStatus {
    let Some(header) = elf::header(bytes).filter(|h| h.machine == elf::EM_AMDGPU) else {
        return sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
    };
    let Some(image) = elf::Image::parse(bytes) else {
        return sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
    };
    let targets: Vec<&str> = w.agents[agent]
        .gpu
        .iter()
        .flat_map(SimAgent::isa_names)
        .map(|name| name.split(':').next().unwrap_or(name))
        .collect();
    if let Some(processor) = TargetId::from_header(&header).map(|t| t.processor) {
        if !targets.contains(&processor.as_str()) {
            return sys::HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS;
        }
    }
    let Some(segments) = segments(bytes, &header) else {
        return sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
    };
    let symbols = image.symbols();
    let extent = if segments.is_empty() {
        symbols
            .iter()
            .map(|(_, s)| s.value.saturating_add(s.size))
            .max()
            .unwrap_or(0) as usize
    } else {
        segments.iter().map(|s| s.1.saturating_add(s.3)).max().unwrap_or(0)
    };
    if extent > 1 << 30 {
        return sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
    }
    let size = extent.max(1).div_ceil(GRANULE) * GRANULE;
    let layout = Layout::from_size_align(size, GRANULE).expect("an image layout");
    // SAFETY: the layout is non-empty.
    let base = unsafe { std::alloc::alloc_zeroed(layout) } as usize;
    if base == 0 {
        return sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    let place = |at: usize, data: &[u8]| {
        if at.checked_add(data.len()).is_some_and(|end| end <= size) {
            // SAFETY: `at..at + data.len()` lies inside the `size` bytes at `base`.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), (base + at) as *mut u8, data.len()) };
        }
    };
    if segments.is_empty() {
        for (_, symbol) in &symbols {
            if let Some(data) = image.symbol_bytes(symbol) {
                place(symbol.value as usize, data);
            }
        }
    } else {
        for &(offset, address, file_size, _) in &segments {
            if let Some(data) = offset.checked_add(file_size).and_then(|end| bytes.get(offset..end)) {
                place(address, data);
            }
        }
    }
    let address_of = |name: &[u8]| symbols.iter().find(|(n, _)| *n == name).map(|(_, s)| s.value);
    for relocation in image.relocations() {
        let value = match relocation.kind {
            R_AMDGPU_RELATIVE64 => (base as i64 + relocation.addend) as u64,
            R_AMDGPU_ABS64 => match address_of(relocation.symbol) {
                Some(at) => (base as u64 + at).wrapping_add(relocation.addend as u64),
                None => continue,
            },
            _ => continue,
        };
        place(relocation.offset as usize, &value.to_le_bytes());
    }
    let mut handles = Vec::new();
    for (name, symbol) in &symbols {
        if symbol.kind != 1 || name.is_empty() {
            continue;
        }
        let name = String::from_utf8_lossy(name).into_owned();
        // ROCr's loader registers no local symbol that is not a kernel (`STT_AMDGPU_HSA_KERNEL`, code
        // object v2), so `hsa_executable_get_symbol_by_name` cannot find a hidden global.
        if symbol.is_local() {
            continue;
        }
        let at = symbol.value as usize;
        let kind = match name.strip_suffix(".kd") {
            Some(kernel) if symbol.size >= 64 && at + 64 <= size => SymbolKind::Kernel(Kernel {
                name: kernel.to_string(),
                object: (base + at) as u64,
                group: u32_at(base, at),
                private: u32_at(base, at + 4),
                kernarg_size: u32_at(base, at + 8),
                // kernel_code_properties (u16 at 56), bit 11: the kernel uses a dynamic stack.
                dynamic_stack: u32_at(base, at + 56) & (1 << 11) != 0,
            }),
            _ => SymbolKind::Variable {
                address: (base + at) as u64,
                size: symbol.size as u32,
            },
        };
        let h = handle();
        if let SymbolKind::Kernel(k) = &kind {
            w.kernel_objects.insert(k.object, h);
        }
        w.symbols.insert(
            h,
            Symbol {
                executable,
                agent,
                name,
                kind,
            },
        );
        handles.push(h);
    }
    let e = w.executables.get_mut(&executable).expect("checked by the caller");
    e.symbols.extend(handles);
    e.loaded.push(Loaded { agent, base, size });
    HSA_STATUS_SUCCESS
}

pub(super) unsafe extern "C" fn hsa_code_object_deserialize(
    _serialized: *mut c_void,
    _size: usize,
    _options: *const c_char,
    _code_object: *mut HsaCodeObject,
) -> HsaStatus {
    unused("hsa_code_object_deserialize")
}

pub(super) unsafe extern "C" fn hsa_code_object_destroy(_code_object: HsaCodeObject) -> HsaStatus {
    unused("hsa_code_object_destroy")
}

pub(super) unsafe extern "C" fn hsa_code_object_reader_create_from_memory(
    code_object: *const c_void,
    size: usize,
    reader: *mut HsaCodeObjectReader,
) -> HsaStatus {
    call("hsa_code_object_reader_create_from_memory", |w| {
        if reader.is_null() || code_object.is_null() || size == 0 {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // As ROCr's reader, it only keeps the bytes: what they hold is judged when they are loaded.
        // SAFETY: the caller passes `size` readable bytes.
        let bytes = unsafe { std::slice::from_raw_parts(code_object.cast::<u8>(), size) }.to_vec();
        let h = handle();
        w.readers.insert(h, bytes);
        // SAFETY: writable per the API.
        unsafe { *reader = HsaCodeObjectReader { handle: h } };
        HSA_STATUS_SUCCESS
    })
}

pub(super) unsafe extern "C" fn hsa_code_object_reader_destroy(reader: HsaCodeObjectReader) -> HsaStatus {
    call("hsa_code_object_reader_destroy", |w| {
        match w.readers.remove(&reader.handle) {
            Some(_) => HSA_STATUS_SUCCESS,
            None => sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER,
        }
    })
}

pub(super) fn create_executable(
    w: &mut World,
    profile: u32,
    frozen: bool,
    executable: *mut HsaExecutable,
) -> HsaStatus {
    if executable.is_null() || profile > sys::profile::FULL {
        return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let h = handle();
    w.executables.insert(
        h,
        Executable {
            frozen,
            loaded: Vec::new(),
            symbols: Vec::new(),
        },
    );
    // SAFETY: writable per the API.
    unsafe { *executable = HsaExecutable { handle: h } };
    HSA_STATUS_SUCCESS
}

pub(super) unsafe extern "C" fn hsa_executable_create(
    _profile: u32,
    _executable_state: u32,
    _options: *const c_char,
    _executable: *mut HsaExecutable,
) -> HsaStatus {
    unused("hsa_executable_create")
}

pub(super) unsafe extern "C" fn hsa_executable_create_alt(
    profile: u32,
    default_float_rounding_mode: u32,
    _options: *const c_char,
    executable: *mut HsaExecutable,
) -> HsaStatus {
    call("hsa_executable_create_alt", |w| {
        if default_float_rounding_mode > sys::float_rounding_mode::NEAR {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        create_executable(w, profile, false, executable)
    })
}

pub(super) unsafe extern "C" fn hsa_executable_destroy(executable: HsaExecutable) -> HsaStatus {
    call("hsa_executable_destroy", |w| {
        let Some(e) = w.executables.remove(&executable.handle) else {
            return sys::HSA_STATUS_ERROR_INVALID_EXECUTABLE;
        };
        for h in e.symbols {
            if let Some(Symbol {
                kind: SymbolKind::Kernel(k),
                ..
            }) = w.symbols.remove(&h)
            {
                w.kernel_objects.remove(&k.object);
            }
        }
        for loaded in e.loaded {
            // SAFETY: allocated in `load` with this layout.
            unsafe {
                std::alloc::dealloc(
                    loaded.base as *mut u8,
                    Layout::from_size_align_unchecked(loaded.size, GRANULE),
                )
            };
        }
        HSA_STATUS_SUCCESS
    })
}

/// The checks common to both loading entry points; then `load`.
pub(super) fn load_checked(
    w: &mut World,
    executable: u64,
    agent: HsaAgent,
    bytes: Result<Vec<u8>, HsaStatus>,
) -> HsaStatus {
    match w.executables.get(&executable) {
        None => return sys::HSA_STATUS_ERROR_INVALID_EXECUTABLE,
        Some(e) if e.frozen => return sys::HSA_STATUS_ERROR_FROZEN_EXECUTABLE,
        Some(_) => {}
    }
    let Some(index) = w.agent(agent).filter(|&i| w.agents[i].gpu.is_some()) else {
        return sys::HSA_STATUS_ERROR_INVALID_AGENT;
    };
    match bytes {
        Ok(bytes) if elf::header(&bytes).is_some_and(|h| h.machine == elf::EM_AMDGPU) => {
            load(w, executable, index, &bytes)
        }
        Ok(_) => sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
        Err(status) => status,
    }
}

pub(super) unsafe extern "C" fn hsa_executable_load_code_object(
    _executable: HsaExecutable,
    _agent: HsaAgent,
    _code_object: HsaCodeObject,
    _options: *const c_char,
) -> HsaStatus {
    unused("hsa_executable_load_code_object")
}

pub(super) unsafe extern "C" fn hsa_executable_load_agent_code_object(
    executable: HsaExecutable,
    agent: HsaAgent,
    reader: HsaCodeObjectReader,
    _options: *const c_char,
    loaded_code_object: *mut HsaLoadedCodeObject,
) -> HsaStatus {
    call("hsa_executable_load_agent_code_object", |w| {
        let bytes = w
            .readers
            .get(&reader.handle)
            .cloned()
            .ok_or(sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER);
        let status = load_checked(w, executable.handle, agent, bytes);
        if status == HSA_STATUS_SUCCESS && !loaded_code_object.is_null() {
            // SAFETY: writable per the API.
            unsafe { *loaded_code_object = HsaLoadedCodeObject { handle: handle() } };
        }
        status
    })
}

pub(super) unsafe extern "C" fn hsa_executable_freeze(executable: HsaExecutable, _options: *const c_char) -> HsaStatus {
    call("hsa_executable_freeze", |w| {
        match w.executables.get_mut(&executable.handle) {
            None => sys::HSA_STATUS_ERROR_INVALID_EXECUTABLE,
            Some(e) if e.frozen => sys::HSA_STATUS_ERROR_FROZEN_EXECUTABLE,
            Some(e) => {
                e.frozen = true;
                HSA_STATUS_SUCCESS
            }
        }
    })
}

pub(super) unsafe extern "C" fn hsa_executable_validate(executable: HsaExecutable, result: *mut u32) -> HsaStatus {
    call("hsa_executable_validate", |w| {
        if !w.executables.contains_key(&executable.handle) {
            return sys::HSA_STATUS_ERROR_INVALID_EXECUTABLE;
        }
        if result.is_null() {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: writable per the API; 0 means valid.
        unsafe { *result = 0 };
        HSA_STATUS_SUCCESS
    })
}

pub(super) unsafe extern "C" fn hsa_executable_get_symbol_by_name(
    executable: HsaExecutable,
    symbol_name: *const c_char,
    agent: *const HsaAgent,
    symbol: *mut HsaExecutableSymbol,
) -> HsaStatus {
    call("hsa_executable_get_symbol_by_name", |w| {
        let Some(e) = w.executables.get(&executable.handle) else {
            return sys::HSA_STATUS_ERROR_INVALID_EXECUTABLE;
        };
        if symbol_name.is_null() || symbol.is_null() {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: NUL-terminated per the API.
        let name = unsafe { CStr::from_ptr(symbol_name) }.to_string_lossy();
        let wanted = if agent.is_null() {
            None
        } else {
            // SAFETY: readable per the API.
            match w.agent(unsafe { *agent }) {
                Some(i) => Some(i),
                None => return sys::HSA_STATUS_ERROR_INVALID_AGENT,
            }
        };
        let found = e.symbols.iter().copied().find(|h| {
            let s = &w.symbols[h];
            s.name == name && wanted.is_none_or(|a| a == s.agent)
        });
        match found {
            Some(h) => {
                // SAFETY: writable per the API.
                unsafe { *symbol = HsaExecutableSymbol { handle: h } };
                HSA_STATUS_SUCCESS
            }
            None => sys::HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
        }
    })
}

pub(super) unsafe extern "C" fn hsa_executable_symbol_get_info(
    symbol: HsaExecutableSymbol,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    call("hsa_executable_symbol_get_info", |w| {
        let Some(s) = w.symbols.get(&symbol.handle) else {
            return sys::HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL;
        };
        if value.is_null() {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let frozen = w.executables.get(&s.executable).is_some_and(|e| e.frozen);
        use symbol_info as i;
        // SAFETY: in every arm, `value` is writable for the attribute's documented type.
        unsafe {
            match (attribute, &s.kind) {
                (i::TYPE, SymbolKind::Kernel(_)) => put(value, symbol_kind::KERNEL),
                (i::TYPE, SymbolKind::Variable { .. }) => put(value, symbol_kind::VARIABLE),
                (i::NAME_LENGTH, _) => put(value, s.name.len() as u32),
                (i::NAME, _) => std::ptr::copy_nonoverlapping(s.name.as_ptr(), value.cast(), s.name.len()),
                (i::MODULE_NAME_LENGTH, _) => put(value, 0u32),
                (i::MODULE_NAME, _) => {}
                // HSA_SYMBOL_LINKAGE_PROGRAM.
                (i::LINKAGE, _) => put(value, 1u32),
                (i::IS_DEFINITION, _) => put(value, true),
                (i::AGENT, _) => put(
                    value,
                    HsaAgent {
                        handle: w.agents[s.agent].handle,
                    },
                ),
                // HSA_VARIABLE_ALLOCATION_AGENT and HSA_VARIABLE_SEGMENT_GLOBAL.
                (i::VARIABLE_ALLOCATION | i::VARIABLE_SEGMENT, SymbolKind::Variable { .. }) => put(value, 0u32),
                (i::VARIABLE_ALIGNMENT, SymbolKind::Variable { .. }) => put(value, 8u32),
                (i::VARIABLE_SIZE, SymbolKind::Variable { size, .. }) => put(value, *size),
                (i::VARIABLE_IS_CONST, SymbolKind::Variable { .. }) => put(value, false),
                // The header: 0 while the executable is not frozen.
                (i::VARIABLE_ADDRESS, SymbolKind::Variable { address, .. }) => {
                    put(value, if frozen { *address } else { 0 })
                }
                (i::KERNEL_OBJECT, SymbolKind::Kernel(k)) => put(value, if frozen { k.object } else { 0 }),
                (i::KERNEL_KERNARG_SEGMENT_SIZE, SymbolKind::Kernel(k)) => put(value, k.kernarg_size),
                (i::KERNEL_KERNARG_SEGMENT_ALIGNMENT, SymbolKind::Kernel(_)) => put(value, 8u32),
                (i::KERNEL_GROUP_SEGMENT_SIZE, SymbolKind::Kernel(k)) => put(value, k.group),
                (i::KERNEL_PRIVATE_SEGMENT_SIZE, SymbolKind::Kernel(k)) => put(value, k.private),
                (i::KERNEL_DYNAMIC_CALLSTACK, SymbolKind::Kernel(k)) => put(value, k.dynamic_stack),
                // HSA_DEFAULT_CALL_CONVENTION... the only one: 0.
                (i::KERNEL_CALL_CONVENTION, SymbolKind::Kernel(_)) => put(value, 0u32),
                _ => return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT,
            }
        }
        HSA_STATUS_SUCCESS
    })
}

pub(super) unsafe extern "C" fn hsa_executable_iterate_symbols(
    executable: HsaExecutable,
    callback: ExecutableSymbolCallback,
    data: *mut c_void,
) -> HsaStatus {
    let symbols = listed("hsa_executable_iterate_symbols", |w| {
        let e = w
            .executables
            .get(&executable.handle)
            .ok_or(sys::HSA_STATUS_ERROR_INVALID_EXECUTABLE)?;
        Ok(e.symbols.iter().map(|&handle| HsaExecutableSymbol { handle }).collect())
    });
    // SAFETY: the callback and its data are the caller's, called as the API promises.
    iterate(symbols, |symbol| unsafe { callback(executable, symbol, data) })
}
