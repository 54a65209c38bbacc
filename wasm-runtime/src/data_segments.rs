//! Merges a module's active data segments before it is compiled. Go's linker writes one segment
//! per run of non-zero bytes (66,291 in the Go Deployment example), and wasmtime initialises
//! memory (without copy-on-write images, see `engine`) from a startup function with a block per
//! segment: Cranelift compiles that function for every tier (nearly all of a debug build's
//! half-minute compile, Winch's included, since Winch leaves it to Cranelift), and every
//! instantiation runs it. Merged, the same bytes land in memory from a handful of segments.
//!
//! Written here rather than with a rewriting crate (walrus re-encodes every function): only the
//! data section changes, and every other byte, the code section's offsets in trap backtraces
//! included, stays where it was.

use std::borrow::Cow;

use wasmparser::{DataKind, Encoding, Operator, Parser, Payload};

/// Zero bytes a merged segment may carry between two of the original ones: copying a gap this
/// small costs about what one more segment (a bounds check and a call) costs.
const MAX_GAP: u32 = 1024;

/// The module's bytes with its active data segments merged where that changes nothing a guest
/// can observe; the input unchanged otherwise (or when it does not parse: the compiler then
/// reports the error as it would have).
///
/// Merging is sound when every segment is active, in memory 0, at a constant `i32` offset, and no
/// two overlap: then the order in which they are applied cannot matter, memory starts zeroed, and
/// the merged segments reach exactly as far (so an out-of-bounds segment still fails the
/// instantiation). A data count section means code may name segments by index (`memory.init`,
/// `data.drop`), so such modules are left alone.
pub(crate) fn merge(bytes: &[u8]) -> Cow<'_, [u8]> {
    match merged(bytes) {
        Some(rewritten) => Cow::Owned(rewritten),
        None => Cow::Borrowed(bytes),
    }
}

/// One active segment: where it lands and what it holds.
struct Segment<'a> {
    offset: u32,
    data: &'a [u8],
}

impl Segment<'_> {
    fn end(&self) -> u64 {
        u64::from(self.offset) + self.data.len() as u64
    }
}

fn merged(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut section_end = 0u64;
    let mut data_section = None;
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.ok()?;
        match &payload {
            Payload::Version {
                encoding, range, ..
            } => {
                if *encoding != Encoding::Module {
                    return None;
                }
                section_end = range.end;
            }
            Payload::DataCountSection { .. } => return None,
            Payload::DataSection(reader) => {
                let mut segments = Vec::new();
                for data in reader.clone() {
                    segments.push(active_segment(data.ok()?)?);
                }
                data_section = Some((section_end, reader.range().end, segments));
            }
            _ => {}
        }
        if let Some((_, range)) = payload.as_section() {
            section_end = range.end;
        }
    }
    let (start, end, mut segments) = data_section?;
    let (start, end) = (usize::try_from(start).ok()?, usize::try_from(end).ok()?);
    segments.sort_by_key(|s| s.offset);
    if segments
        .windows(2)
        .any(|w| w[0].end() > u64::from(w[1].offset))
    {
        return None;
    }
    let merged = coalesce(&segments);
    if merged.len() == segments.len() {
        return None;
    }
    let mut section = wasm_encoder::DataSection::new();
    for (offset, data) in &merged {
        let offset = i32::from_ne_bytes(offset.to_ne_bytes());
        section.active(
            0,
            &wasm_encoder::ConstExpr::i32_const(offset),
            data.iter().copied(),
        );
    }
    let mut out = Vec::with_capacity(bytes.len());
    out.extend_from_slice(&bytes[..start]);
    wasm_encoder::Section::append_to(&section, &mut out);
    out.extend_from_slice(&bytes[end..]);
    Some(out)
}

/// The segment if it is one merging may move: active, memory 0, a lone `i32.const` offset.
fn active_segment(data: wasmparser::Data<'_>) -> Option<Segment<'_>> {
    let DataKind::Active {
        memory_index: 0,
        offset_expr,
    } = data.kind
    else {
        return None;
    };
    let mut ops = offset_expr.get_operators_reader();
    let Operator::I32Const { value } = ops.read().ok()? else {
        return None;
    };
    let Operator::End = ops.read().ok()? else {
        return None;
    };
    ops.finish().ok()?;
    Some(Segment {
        offset: u32::from_ne_bytes(value.to_ne_bytes()),
        data: data.data,
    })
}

/// Sorted, non-overlapping segments joined wherever at most [`MAX_GAP`] zero bytes lie between.
fn coalesce(segments: &[Segment<'_>]) -> Vec<(u32, Vec<u8>)> {
    let mut merged: Vec<(u32, Vec<u8>)> = Vec::new();
    for segment in segments {
        if let Some((offset, data)) = merged.last_mut() {
            let end = u64::from(*offset) + data.len() as u64;
            let gap = u64::from(segment.offset) - end;
            if gap <= u64::from(MAX_GAP) {
                data.resize(data.len() + gap as usize, 0);
                data.extend_from_slice(segment.data);
                continue;
            }
        }
        merged.push((segment.offset, segment.data.to_vec()));
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::{Engine, Instance, Module, Store};

    fn segment_count(bytes: &[u8]) -> usize {
        Parser::new(0)
            .parse_all(bytes)
            .filter_map(|p| match p.unwrap() {
                Payload::DataSection(r) => Some(r.count() as usize),
                _ => None,
            })
            .sum()
    }

    /// The first `len` bytes of memory `memory` after instantiating `bytes`.
    fn memory_after_instantiation(bytes: &[u8], len: usize) -> wasmtime::Result<Vec<u8>> {
        let engine = Engine::default();
        let module = Module::new(&engine, bytes)?;
        let mut store = Store::new(&engine, ());
        let instance = Instance::new(&mut store, &module, &[])?;
        let memory = instance.get_memory(&mut store, "memory").unwrap();
        Ok(memory.data(&store)[..len].to_vec())
    }

    #[test]
    fn go_like_segments_merge_and_memory_is_the_same() {
        // Out of order (as Go writes them), small gaps and one gap too large to fill.
        let wat = r#"(module (memory (export "memory") 1)
            (data (i32.const 4000) "late")
            (data (i32.const 16) "abc")
            (data (i32.const 20) "def")
            (data (i32.const 1000) "\01\02")
            (func (export "f") (result i32) (i32.load8_u (i32.const 16))))"#;
        let original = wat::parse_str(wat).unwrap();
        let rewritten = merge(&original);
        assert_eq!(segment_count(&original), 4);
        assert_eq!(
            segment_count(&rewritten),
            2,
            "16..1002 joined; 4000 is 2998 bytes on"
        );
        assert_eq!(
            memory_after_instantiation(&original, 8192).unwrap(),
            memory_after_instantiation(&rewritten, 8192).unwrap()
        );
    }

    #[test]
    fn only_the_data_section_changes() {
        let original =
            wat::parse_str(r#"(module (memory 1) (data (i32.const 0) "a") (data (i32.const 2) "b") (func (export "f")) (@custom "note" "kept"))"#)
                .unwrap();
        let rewritten = merge(&original).into_owned();
        assert!(rewritten.len() < original.len());
        let code = |b: &[u8]| {
            Parser::new(0)
                .parse_all(b)
                .find_map(|p| match p.unwrap() {
                    Payload::CodeSectionStart {
                        unchecked_range, ..
                    } => Some(
                        b[unchecked_range.start as usize..unchecked_range.end as usize].to_vec(),
                    ),
                    _ => None,
                })
                .unwrap()
        };
        assert_eq!(code(&original), code(&rewritten));
        assert!(rewritten.ends_with(b"kept"));
    }

    #[test]
    fn segments_merging_could_change_are_left_alone() {
        for wat in [
            // Overlapping: the later segment wins, whichever order they merge in.
            r#"(module (memory 1) (data (i32.const 0) "aaaa") (data (i32.const 2) "bb"))"#,
            // A passive segment is named by index.
            r#"(module (memory 1) (data (i32.const 0) "a") (data (i32.const 2) "b") (data "p"))"#,
            // A global offset is not known before instantiation.
            r#"(module (import "env" "g" (global i32)) (memory 1) (data (i32.const 0) "a") (data (global.get 0) "b"))"#,
            // One segment: nothing to merge.
            r#"(module (memory 1) (data (i32.const 0) "a"))"#,
        ] {
            let original = wat::parse_str(wat).unwrap();
            assert!(matches!(merge(&original), Cow::Borrowed(_)), "{wat}");
        }
        assert!(matches!(merge(b"not wasm"), Cow::Borrowed(_)));
    }

    #[test]
    fn an_out_of_bounds_segment_still_fails_the_instantiation() {
        let wat = r#"(module (memory (export "memory") 1)
            (data (i32.const 0) "a") (data (i32.const 65535) "bc"))"#;
        let original = wat::parse_str(wat).unwrap();
        let rewritten = merge(&original);
        assert_eq!(segment_count(&rewritten), 2);
        assert!(memory_after_instantiation(&original, 1).is_err());
        assert!(memory_after_instantiation(&rewritten, 1).is_err());
        let wat = r#"(module (memory (export "memory") 1)
            (data (i32.const 0) "a") (data (i32.const 2) "b") (data (i32.const 65535) "bc"))"#;
        let rewritten = wat::parse_str(wat).unwrap();
        assert_eq!(segment_count(&merge(&rewritten)), 2);
        assert!(memory_after_instantiation(&merge(&rewritten), 1).is_err());
    }
}
