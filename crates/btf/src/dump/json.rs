//! bpftool's JSON format (`bpftool -j btf dump file FILE`): the same fields
//! as the raw format, as `{"types": [{"id": .., "kind": .., "name": .., ...}]}`.
//!
//! Equal to bpftool's output as a JSON value (field order and spacing are
//! not promised). Field names and which fields appear follow bpftool: a
//! member carries `bitfield_size` only when it is a bitfield, a signed
//! enumerator's `val` is negative where bpftool's is, and DATASEC entries do
//! not repeat the variable's name as the raw format does.
//!
//! The location kinds (bpf-next) carry the raw format's fields under the
//! same names, their records as `values`, `params` and `locs` arrays; no
//! bpftool JSON for them was available to compare with.

use std::io::{self, Write};

use super::fields::{self, name_bytes, Render, Value};
use super::raw::Sink;
use crate::{Btf, Type, TypeId};

/// Writes `btf` in bpftool's json format.
pub fn dump<W: Write>(btf: &Btf, out: &mut W) -> io::Result<()> {
    let mut s = Sink::new(out);
    s.bytes(b"{\"types\":[");
    for (i, (id, t)) in btf.iter().enumerate() {
        if i > 0 {
            s.byte(b',');
        }
        write_type(&mut s, btf, id, t);
        s.maybe_flush()?;
    }
    s.bytes(b"]}\n");
    s.finish()
}

fn write_type<W: Write>(s: &mut Sink<W>, btf: &Btf, id: TypeId, t: &Type) {
    s.bytes(b"{\"id\":");
    s.int(id);
    s.bytes(b",\"kind\":\"");
    s.bytes(t.kind_name().as_bytes());
    s.bytes(b"\",\"name\":");
    string(s, name_bytes(btf, t.name_off));
    fields::walk(
        &mut Json {
            s: &mut *s,
            first: false,
            first_record: false,
        },
        btf,
        t,
    );
    s.byte(b'}');
}

/// The JSON rendering of [`fields::walk`]: `,"key":value` after the
/// type's id, kind and name, each list of records an array of objects.
struct Json<'s, 'w, W: Write> {
    s: &'s mut Sink<'w, W>,
    /// No comma before the next field: it opens an object.
    first: bool,
    /// No comma before the next record: it opens an array.
    first_record: bool,
}

impl<W: Write> Render for Json<'_, '_, W> {
    fn field(&mut self, key: &'static str, value: Value<'_>) {
        if let Value::DatasecTarget(_) = value {
            // The raw format's alone.
            return;
        }
        let s = &mut *self.s;
        if !std::mem::take(&mut self.first) {
            s.byte(b',');
        }
        s.byte(b'"');
        s.bytes(key.as_bytes());
        s.bytes(b"\":");
        match value {
            Value::Unsigned(n) => s.int(n),
            Value::Signed(n) => s.int(n),
            Value::Hex(n) => s.int(n),
            Value::Word(w) | Value::VarLinkage(w) => string(s, w.as_bytes()),
            Value::Name(b) | Value::Quoted(b) => string(s, b),
            Value::Enum(v, signed) => {
                // bpftool reads the value as libbpf's signed 32-bit field
                // whatever the enum's sign, and an unsigned enum's widens
                // to 64 bits unsigned: 0xffffffff comes out as
                // 18446744073709551615. Equal JSON values means following it.
                s.word(v.value(true), signed)
            }
            Value::Enum64(val, signed) => s.word(val, signed),
            Value::LocValues(words, text) => {
                s.byte(b'[');
                for (i, w) in words.iter().enumerate() {
                    if i > 0 {
                        s.byte(b',');
                    }
                    s.int(*w);
                }
                s.bytes(b"],\"value\":");
                string(s, text.as_bytes());
            }
            Value::DatasecTarget(_) => {}
        }
    }

    fn records(&mut self, key: &'static str) {
        self.s.bytes(b",\"");
        self.s.bytes(key.as_bytes());
        self.s.bytes(b"\":[");
        self.first_record = true;
    }

    fn record(&mut self) {
        if !std::mem::take(&mut self.first_record) {
            self.s.byte(b',');
        }
        self.s.byte(b'{');
        self.first = true;
    }

    fn end_record(&mut self) {
        self.s.byte(b'}');
        self.first = false;
    }

    fn end_records(&mut self) {
        self.s.byte(b']');
    }
}

/// A JSON string literal. Names are almost always plain ASCII identifiers,
/// which are copied as they are; anything else is escaped, and bytes that are
/// not UTF-8 become U+FFFD so that the output stays valid JSON.
fn string<W: Write>(s: &mut Sink<W>, b: &[u8]) {
    s.byte(b'"');
    if b.iter()
        .all(|&c| (0x20..0x80).contains(&c) && c != b'"' && c != b'\\')
    {
        s.bytes(b);
    } else {
        escape(s, &String::from_utf8_lossy(b));
    }
    s.byte(b'"');
}

fn escape<W: Write>(s: &mut Sink<W>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for c in text.chars() {
        match c {
            '"' => s.bytes(b"\\\""),
            '\\' => s.bytes(b"\\\\"),
            '\n' => s.bytes(b"\\n"),
            '\r' => s.bytes(b"\\r"),
            '\t' => s.bytes(b"\\t"),
            c if (c as u32) < 0x20 => {
                let v = c as usize;
                s.bytes(b"\\u00");
                s.byte(HEX[v >> 4]);
                s.byte(HEX[v & 0xf]);
            }
            c => {
                let mut utf8 = [0u8; 4];
                s.bytes(c.encode_utf8(&mut utf8).as_bytes());
            }
        }
    }
}
