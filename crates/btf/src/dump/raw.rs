//! bpftool's raw text format (`bpftool btf dump file FILE`), byte for byte.
//!
//! One line per type, `[id] KIND 'name'` and the kind's fields, then one
//! tab-indented line per member, enumerator, parameter or section entry.
//! Only the object's own types are printed, so a split BTF shows its ids
//! continuing after the base's. Names are looked up through the base; an
//! anonymous name (offset 0) reads `(anon)` and an offset outside the string
//! sections reads `(invalid)`, as bpftool prints them.
//!
//! Which fields each kind has, in which order, is `fields::walk`'s,
//! shared with the JSON format; this file writes them as bpftool's text.
//!
//! The vmlinux dump is ~12 MB of short fields, so the output is staged in a
//! `Sink` and integers are formatted with `itoa` rather than `write!`.

use std::io::{self, Write};

use super::fields::{self, datasec_target, name_bytes, Render, Value};
use crate::{Btf, Type, TypeId};

/// Bytes staged before they are handed to the writer in one `write_all`.
const FLUSH_AT: usize = 1 << 18;

/// An output buffer that the dumpers fill with plain byte appends and that
/// goes to the underlying writer in large chunks.
pub(crate) struct Sink<'w, W: Write> {
    buf: Vec<u8>,
    out: &'w mut W,
    num: itoa::Buffer,
}

impl<'w, W: Write> Sink<'w, W> {
    pub(crate) fn new(out: &'w mut W) -> Self {
        Sink {
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            out,
            num: itoa::Buffer::new(),
        }
    }

    #[inline]
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    #[inline]
    pub(crate) fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    #[inline]
    pub(crate) fn int<I: itoa::Integer>(&mut self, v: I) {
        self.buf.extend_from_slice(self.num.format(v).as_bytes());
    }

    /// A 64-bit word as a number: negative when `signed` and its top bit
    /// is set (an enumerator's value, [`crate::EnumValue::value`]).
    #[inline]
    pub(crate) fn word(&mut self, val: u64, signed: bool) {
        if signed {
            self.int(val as i64);
        } else {
            self.int(val);
        }
    }

    /// Hands the staged bytes over once enough have gathered; called between
    /// types so that a chunk boundary never needs care.
    #[inline]
    pub(crate) fn maybe_flush(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.out.flush()
    }
}

/// Writes `btf` in bpftool's raw format.
pub fn dump<W: Write>(btf: &Btf, out: &mut W) -> io::Result<()> {
    let mut s = Sink::new(out);
    for (id, t) in btf.iter() {
        write_type(&mut s, btf, id, t);
        s.maybe_flush()?;
    }
    s.finish()
}

fn write_type<W: Write>(s: &mut Sink<W>, btf: &Btf, id: TypeId, t: &Type) {
    s.byte(b'[');
    s.int(id);
    s.bytes(b"] ");
    s.bytes(t.kind_name().as_bytes());
    s.bytes(b" '");
    s.bytes(name_bytes(btf, t.name_off));
    s.byte(b'\'');
    fields::walk(
        &mut Text {
            s: &mut *s,
            btf,
            first: false,
        },
        btf,
        t,
    );
    s.byte(b'\n');
}

/// The raw format's rendering of [`fields::walk`]: ` key=value` after the
/// type's head, each record on a line of its own after a tab.
struct Text<'s, 'w, W: Write> {
    s: &'s mut Sink<'w, W>,
    btf: &'s Btf,
    /// No space before the next field: it opens a record's line.
    first: bool,
}

impl<W: Write> Text<'_, '_, W> {
    fn space(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.s.byte(b' ');
        }
    }

    fn quoted(&mut self, b: &[u8]) {
        self.s.byte(b'\'');
        self.s.bytes(b);
        self.s.byte(b'\'');
    }
}

impl<W: Write> Render for Text<'_, '_, W> {
    fn field(&mut self, key: &'static str, value: Value<'_>) {
        match value {
            Value::Name(name) => {
                self.space();
                self.quoted(name);
                return;
            }
            Value::DatasecTarget(ty) => {
                if let Some((kind, name)) = datasec_target(self.btf, ty) {
                    self.space();
                    self.s.byte(b'(');
                    self.s.bytes(kind.as_bytes());
                    self.s.byte(b' ');
                    self.quoted(name);
                    self.s.byte(b')');
                }
                return;
            }
            // The comma is bpftool's.
            Value::VarLinkage(_) => self.s.bytes(b", "),
            _ => self.space(),
        }
        self.s.bytes(key.as_bytes());
        self.s.byte(b'=');
        let s = &mut *self.s;
        match value {
            Value::Unsigned(n) => s.int(n),
            Value::Signed(n) => s.int(n),
            Value::Word(w) | Value::VarLinkage(w) => s.bytes(w.as_bytes()),
            Value::Quoted(b) => self.quoted(b),
            Value::LocValues(_, text) => self.quoted(text.as_bytes()),
            Value::Hex(n) => {
                s.bytes(b"0x");
                s.bytes(format!("{n:x}").as_bytes());
            }
            Value::Enum(v, signed) => s.word(v.value(signed), signed),
            Value::Enum64(val, signed) => {
                s.word(val, signed);
                s.bytes(if signed { b"LL" } else { b"ULL" });
            }
            Value::Name(_) | Value::DatasecTarget(_) => {}
        }
    }

    fn records(&mut self, _key: &'static str) {}

    fn record(&mut self) {
        self.s.bytes(b"\n\t");
        self.first = true;
    }

    fn end_record(&mut self) {
        self.first = false;
    }

    fn end_records(&mut self) {}
}
