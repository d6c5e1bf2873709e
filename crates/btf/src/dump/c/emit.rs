//! Phase 2: writing definitions and declarations (see the module comment in
//! `mod.rs` for the emit states and the declaration-chain method).

use std::io;

use super::{too_deep, Dumper, EmitState, MAX_DEPTH};
use crate::{Kind, Member, Param, Type, TypeData, TypeId};

/// The part of the shared declaration stack that one declaration owns:
/// `decl_stack[start..start + cnt]`, consumed from the top.
struct Frame {
    start: usize,
    cnt: usize,
}

/// GCC's internal ARM SIMD types, which GCC writes typedefs to but no
/// compiler defines: libbpf aliases them when it meets the base type.
const MISSING_BASE_TYPES: [(&[u8], &[u8]); 4] = [
    (b"__Poly8_t", b"unsigned char"),
    (b"__Poly16_t", b"unsigned short"),
    (b"__Poly64_t", b"unsigned long long"),
    (b"__Poly128_t", b"unsigned __int128"),
];

impl<'a> Dumper<'a> {
    /// Writes `id` as a top-level definition (`cont_id` 0) or makes sure
    /// what a definition in progress (`cont_id`, the struct or typedef
    /// being written) needs from `id` exists: forward declarations for named
    /// structs only reached through pointers, nothing for what is complete.
    pub(super) fn emit_type(&mut self, id: TypeId, cont_id: TypeId, depth: u32) -> io::Result<()> {
        let st = self.state[id as usize];
        if st.emit == EmitState::Emitted {
            return Ok(());
        }
        let Some(t) = self.get(id) else {
            return Ok(());
        };
        if depth > MAX_DEPTH {
            return Err(too_deep(id));
        }
        self.step(id)?;
        let depth = depth + 1;
        let top_level = cont_id == 0;

        if st.emit == EmitState::Emitting {
            // We came back to a definition being written.
            if st.fwd_emitted {
                return Ok(());
            }
            return self.emit_reentered(id, t, cont_id, depth);
        }

        match &t.data {
            TypeData::Int { .. } => {
                self.emit_missing_alias(id);
                self.state[id as usize].emit = EmitState::Emitted;
            }
            TypeData::Enum { .. } | TypeData::Enum64 { .. } => {
                if top_level {
                    self.emit_enum_def(id, t, 0);
                    self.put(b";\n\n");
                }
                self.state[id as usize].emit = EmitState::Emitted;
            }
            TypeData::Array(a) => self.emit_type(a.elem, cont_id, depth)?,
            TypeData::Fwd => {
                self.emit_fwd_def(id, t);
                self.put(b";\n\n");
                self.state[id as usize].emit = EmitState::Emitted;
            }
            TypeData::Typedef { ty } => {
                self.state[id as usize].emit = EmitState::Emitting;
                self.emit_type(*ty, id, depth)?;
                // Written already if its target led back to it.
                if !self.state[id as usize].fwd_emitted && !self.is_blacklisted(t) {
                    self.emit_typedef_def(id, t, 0, depth)?;
                    self.put(b";\n\n");
                }
                self.state[id as usize].emit = EmitState::Emitted;
            }
            TypeData::Struct { members, .. } | TypeData::Union { members, .. } => {
                self.emit_struct_type(id, t, members, cont_id, depth)?
            }
            TypeData::FuncProto { ret, params } => {
                self.emit_type(*ret, cont_id, depth)?;
                for p in params {
                    self.emit_type(p.ty, cont_id, depth)?;
                }
            }
            // A pointer or modifier needs what it wraps; FLOAT and the kinds
            // with no C type (Kind::is_c_type) need nothing.
            _ => {
                if let Some(ty) = t.ref_type_in(Kind::is_ptr_or_modifier) {
                    self.emit_type(ty, cont_id, depth)?;
                }
            }
        }
        Ok(())
    }

    /// [`Dumper::emit_type`] come back to `id` while writing its
    /// definition, with no forward declaration written yet: a named struct
    /// gets one, a typedef its definition.
    fn emit_reentered(
        &mut self,
        id: TypeId,
        t: &'a Type,
        cont_id: TypeId,
        depth: u32,
    ) -> io::Result<()> {
        match &t.data {
            TypeData::Struct { .. } | TypeData::Union { .. } => {
                // A struct may point to itself without a declaration;
                // an anonymous one cannot be declared at all (libbpf
                // warns and writes nothing).
                if id == cont_id || t.name_off == 0 {
                    return Ok(());
                }
                self.emit_struct_fwd(id, t);
                self.put(b";\n\n");
                self.state[id as usize].fwd_emitted = true;
            }
            TypeData::Typedef { .. } => {
                // Only reachable through a pointer here, so the typedef
                // can be written before its target is complete.
                if !self.is_blacklisted(t) {
                    self.emit_typedef_def(id, t, 0, depth)?;
                    self.put(b";\n\n");
                }
                self.state[id as usize].fwd_emitted = true;
            }
            _ => {}
        }
        Ok(())
    }

    /// [`Dumper::emit_type`] for a struct or union: what its members need
    /// when they are written out, else a forward declaration; then its
    /// definition at top level.
    fn emit_struct_type(
        &mut self,
        id: TypeId,
        t: &'a Type,
        members: &[Member],
        cont_id: TypeId,
        depth: u32,
    ) -> io::Result<()> {
        let top_level = cont_id == 0;
        self.state[id as usize].emit = EmitState::Emitting;
        if top_level || t.name_off == 0 {
            // Its members will be written out in full: their types
            // need their declarations first. An anonymous struct is
            // part of the definition that contains it.
            let inner = if t.name_off == 0 { cont_id } else { id };
            for m in members {
                self.emit_type(m.ty, inner, depth)?;
            }
        } else if !self.state[id as usize].fwd_emitted && id != cont_id {
            self.emit_struct_fwd(id, t);
            self.put(b";\n\n");
            self.state[id as usize].fwd_emitted = true;
        }
        if top_level {
            self.emit_struct_def(id, t, 0, depth)?;
            self.put(b";\n\n");
            self.state[id as usize].emit = EmitState::Emitted;
        } else {
            self.state[id as usize].emit = EmitState::NotEmitted;
        }
        Ok(())
    }

    /// `__builtin_va_list` is the compiler's own: redefining it breaks
    /// compilation with a compiler other than the kernel's.
    fn is_blacklisted(&self, t: &Type) -> bool {
        t.name_off != 0 && self.str_at(t.name_off) == b"__builtin_va_list"
    }

    fn emit_missing_alias(&mut self, id: TypeId) {
        // Resolving the name counts it, as libbpf does, even for plain ints.
        let name = self.tag_name(id);
        if let Some((_, base)) = MISSING_BASE_TYPES.iter().find(|(n, _)| **n == *name) {
            self.put(b"typedef ");
            self.put(base);
            self.put(b" ");
            self.put(&name);
            self.put(b";\n\n");
        }
    }

    fn emit_struct_fwd(&mut self, id: TypeId, t: &Type) {
        self.put(match t.data {
            TypeData::Union { .. } => b"union",
            _ => b"struct",
        });
        if t.name_off != 0 {
            self.put(b" ");
        }
        let name = self.tag_name(id);
        self.put(&name);
    }

    fn emit_fwd_def(&mut self, id: TypeId, t: &Type) {
        self.put(if t.kind_flag { b"union " } else { b"struct " });
        let name = self.tag_name(id);
        self.put(&name);
    }

    fn emit_enum_fwd(&mut self, id: TypeId) {
        self.put(b"enum ");
        let name = self.tag_name(id);
        self.put(&name);
    }

    fn emit_struct_def(&mut self, id: TypeId, t: &'a Type, lvl: u32, depth: u32) -> io::Result<()> {
        let (is_struct, size, members): (bool, u32, &'a [Member]) = match &t.data {
            TypeData::Struct { size, members } => (true, *size, members),
            TypeData::Union { size, members } => (false, *size, members),
            _ => return Ok(()),
        };
        let align = self.align_of(id);
        let packed = is_struct && self.is_packed(t, size, members);

        self.emit_struct_fwd(id, t);
        self.put(b" {");
        let mut off: i64 = 0;
        let mut prev_bitfield = false;
        for m in members {
            let fname = self.str_at(m.name_off);
            let bits = m.bitfield_size(t.kind_flag);
            let m_off = i64::from(m.bit_offset(t.kind_flag));
            let m_align = if packed { 1 } else { self.align_of(m.ty) };
            let in_bitfield = prev_bitfield && bits != 0;
            self.emit_bit_padding(off, m_off, m_align, in_bitfield, lvl + 1);
            self.put(b"\n");
            self.put_indent(lvl + 1);
            self.emit_type_decl(m.ty, fname, lvl + 1, depth)?;
            if bits != 0 {
                self.put(b": ");
                self.put_u64(u64::from(bits));
                off = m_off + i64::from(bits);
                prev_bitfield = true;
            } else {
                let bytes = self.btf.resolve_size_with(m.ty, self.ptr_sz).unwrap_or(0);
                off = m_off + bytes as i64 * 8;
                prev_bitfield = false;
            }
            self.put(b";");
        }
        if is_struct {
            self.emit_bit_padding(off, i64::from(size) * 8, align, false, lvl + 1);
        }
        // `struct empty {}` stays on one line.
        if !members.is_empty() || size != 0 {
            self.put(b"\n");
            self.put_indent(lvl);
        }
        self.put(b"}");
        if packed {
            self.put(b" __attribute__((packed))");
        }
        Ok(())
    }

    fn emit_enum_def(&mut self, id: TypeId, t: &'a Type, lvl: u32) {
        self.put(b"enum");
        if t.name_off != 0 {
            self.put(b" ");
        }
        let name = self.tag_name(id);
        self.put(&name);
        let signed = t.kind_flag;
        match &t.data {
            TypeData::Enum { values, .. } if !values.is_empty() => {
                self.put(b" {");
                for v in values {
                    self.emit_enumerator(v.name_off, lvl);
                    let val = v.value(signed);
                    if signed {
                        self.put_i64(val as i64);
                    } else {
                        self.put_u64(val);
                    }
                    self.put(b",");
                }
            }
            TypeData::Enum64 { values, .. } if !values.is_empty() => {
                self.put(b" {");
                for v in values {
                    self.emit_enumerator(v.name_off, lvl);
                    if signed {
                        self.put_i64(v.val as i64);
                        self.put(b"LL,");
                    } else {
                        self.put_u64(v.val);
                        self.put(b"ULL,");
                    }
                }
            }
            _ => return,
        }
        // libbpf 1.1 adds mode(byte)/mode(word) for 1- and 8-byte enums, but
        // the libbpf inside Debian's bpftool 7.1 (Linux 6.1's) predates that
        // and writes no attribute: neither do we.
        self.put(b"\n");
        self.put_indent(lvl);
        self.put(b"}");
    }

    /// `\n<indent>NAME = ` for one enumerator; enumerators share the
    /// typedef namespace, so a repeated one becomes `NAME___N`.
    fn emit_enumerator(&mut self, name_off: u32, lvl: u32) {
        let name = self.str_at(name_off);
        let dups = self.name_dups(super::Namespace::Idents, name);
        self.put(b"\n");
        self.put_indent(lvl + 1);
        self.put(name);
        if dups > 1 {
            self.put(b"___");
            self.put_u64(dups as u64);
        }
        self.put(b" = ");
    }

    fn emit_typedef_def(&mut self, id: TypeId, t: &Type, lvl: u32, depth: u32) -> io::Result<()> {
        let name = self.ident_name(id);
        let target = t.ref_type().unwrap_or(0);
        // Old GCCs describe __gnuc_va_list as a typedef of void.
        if target == 0 && *name == *b"__gnuc_va_list" {
            self.put(b"typedef __builtin_va_list __gnuc_va_list");
            return Ok(());
        }
        self.put(b"typedef ");
        self.emit_type_decl(target, &name, lvl, depth)
    }

    /// Writes a declaration of `fname` with type `id` (`fname` may be
    /// empty: an abstract declarator).
    fn emit_type_decl(
        &mut self,
        mut id: TypeId,
        fname: &[u8],
        lvl: u32,
        depth: u32,
    ) -> io::Result<()> {
        let start = self.decl_stack.len();
        loop {
            // Each step moves to another type: a chain longer than the
            // number of types has a loop in it.
            if self.decl_stack.len() - start > self.types.len() {
                self.decl_stack.truncate(start);
                return Err(too_deep(id));
            }
            self.decl_stack.push(id);
            let Some(t) = self.get(id) else {
                break;
            };
            id = match &t.data {
                TypeData::FuncProto { ret, .. } => *ret,
                TypeData::Array(a) => a.elem,
                _ => match t.ref_type_in(Kind::is_ptr_or_modifier) {
                    Some(ty) => ty,
                    // A terminal type, or one that has no place in a
                    // declaration (the chain writer skips it).
                    None => break,
                },
            };
        }
        let mut frame = Frame {
            start,
            cnt: self.decl_stack.len() - start,
        };
        let res = self.emit_type_chain(&mut frame, fname, lvl, depth);
        self.decl_stack.truncate(start);
        res
    }

    /// The id at the top of a frame (the next one to write), if any.
    fn frame_top(&self, frame: &Frame) -> Option<TypeId> {
        frame
            .cnt
            .checked_sub(1)
            .map(|i| self.decl_stack[frame.start + i])
    }

    fn is_modifier(&self, id: TypeId) -> bool {
        self.get(id).is_some_and(|t| t.is_modifier())
    }

    /// Writes the C qualifiers (`const ` ...) that wrap the base type just
    /// popped: in C they go to its left.
    fn emit_mods(&mut self, frame: &mut Frame) {
        while let Some(id) = self.frame_top(frame) {
            let Some(q) = self.get(id).and_then(|t| t.kind().qualifier_keyword()) else {
                return;
            };
            self.put(q.as_bytes());
            self.put(b" ");
            frame.cnt -= 1;
        }
    }

    /// Drops qualifiers on arrays and function prototypes: GCC emits them
    /// (for const elements, for noreturn functions) but C has no place for
    /// them there.
    fn drop_mods(&self, frame: &mut Frame) {
        while let Some(id) = self.frame_top(frame) {
            if !self.is_modifier(id) {
                return;
            }
            frame.cnt -= 1;
        }
    }

    fn emit_name(&mut self, name: &[u8], last_was_ptr: bool) {
        if !name.is_empty() && !last_was_ptr {
            self.put(b" ");
        }
        self.put(name);
    }

    /// Writes a declaration chain from the base type outwards.
    fn emit_type_chain(
        &mut self,
        frame: &mut Frame,
        fname: &[u8],
        lvl: u32,
        depth: u32,
    ) -> io::Result<()> {
        if depth > MAX_DEPTH {
            return Err(too_deep(self.frame_top(frame).unwrap_or(0)));
        }
        self.step(self.frame_top(frame).unwrap_or(0))?;
        let depth = depth + 1;
        // Starts true so that a lone pointer (a function pointer's `*`)
        // gets no space before it.
        let mut last_was_ptr = true;
        while let Some(id) = self.frame_top(frame) {
            frame.cnt -= 1;
            let Some(t) = self.get(id) else {
                self.emit_mods(frame);
                self.put(b"void");
                last_was_ptr = false;
                continue;
            };
            match &t.data {
                TypeData::Int { .. } | TypeData::Float { .. } => {
                    self.emit_mods(frame);
                    let name = self.str_at(t.name_off);
                    self.put(name);
                }
                TypeData::Struct { .. } | TypeData::Union { .. } => {
                    self.emit_mods(frame);
                    if t.name_off == 0 {
                        self.emit_struct_def(id, t, lvl, depth)?;
                    } else {
                        self.emit_struct_fwd(id, t);
                    }
                }
                TypeData::Enum { .. } | TypeData::Enum64 { .. } => {
                    self.emit_mods(frame);
                    if t.name_off == 0 {
                        self.emit_enum_def(id, t, lvl);
                    } else {
                        self.emit_enum_fwd(id);
                    }
                }
                TypeData::Fwd => {
                    self.emit_mods(frame);
                    self.emit_fwd_def(id, t);
                }
                TypeData::Typedef { .. } => {
                    self.emit_mods(frame);
                    let name = self.ident_name(id);
                    self.put(&name);
                }
                TypeData::Ptr { .. } => self.put(if last_was_ptr { b"*" } else { b" *" }),
                TypeData::TypeTag { .. } => {
                    self.emit_mods(frame);
                    let name = self.str_at(t.name_off);
                    self.put(b" __attribute__((btf_type_tag(\"");
                    self.put(name);
                    self.put(b"\")))");
                }
                TypeData::Array(a) => {
                    return self.emit_array_chain(frame, a.nelems, fname, lvl, depth, last_was_ptr)
                }
                TypeData::FuncProto { params, .. } => {
                    return self.emit_func_proto_chain(
                        frame,
                        params,
                        fname,
                        lvl,
                        depth,
                        last_was_ptr,
                    )
                }
                _ => match t.kind().qualifier_keyword() {
                    Some(q) => {
                        self.put(b" ");
                        self.put(q.as_bytes());
                    }
                    // Not a type a declaration can have (Kind::is_c_type:
                    // libbpf warns and stops).
                    None => {
                        debug_assert!(!t.kind().is_c_type());
                        return Ok(());
                    }
                },
            }
            last_was_ptr = matches!(t.data, TypeData::Ptr { .. });
        }
        self.emit_name(fname, last_was_ptr);
        Ok(())
    }

    /// The rest of a declaration chain from an array outwards: what
    /// the chain declares, then the dimension.
    fn emit_array_chain(
        &mut self,
        frame: &mut Frame,
        nelems: u32,
        fname: &[u8],
        lvl: u32,
        depth: u32,
        last_was_ptr: bool,
    ) -> io::Result<()> {
        self.drop_mods(frame);
        let Some(next) = self.frame_top(frame) else {
            self.emit_name(fname, last_was_ptr);
            self.put_array_dim(nelems);
            return Ok(());
        };
        // `int (*p)[4]` but `int a[2][4]`.
        let multidim = matches!(self.get(next).map(|t| &t.data), Some(TypeData::Array(_)));
        if !fname.is_empty() && !last_was_ptr {
            self.put(b" ");
        }
        if !multidim {
            self.put(b"(");
        }
        self.emit_type_chain(frame, fname, lvl, depth)?;
        if !multidim {
            self.put(b")");
        }
        self.put_array_dim(nelems);
        Ok(())
    }

    /// The rest of a declaration chain from a function prototype
    /// outwards: what the chain declares, then the parameter list.
    fn emit_func_proto_chain(
        &mut self,
        frame: &mut Frame,
        params: &[Param],
        fname: &[u8],
        lvl: u32,
        depth: u32,
        last_was_ptr: bool,
    ) -> io::Result<()> {
        self.drop_mods(frame);
        if frame.cnt > 0 {
            self.put(b" (");
            self.emit_type_chain(frame, fname, lvl, depth)?;
            self.put(b")");
        } else {
            self.emit_name(fname, last_was_ptr);
        }
        self.put(b"(");
        // No parameters, or clang's lone void parameter, is
        // `(void)`: Debian's bpftool 7.1 carries libbpf's fix
        // for `()`, which C23 reads differently.
        if params.is_empty() || (params.len() == 1 && params[0].ty == 0) {
            self.put(b"void)");
            return Ok(());
        }
        for (i, p) in params.iter().enumerate() {
            if i > 0 {
                self.put(b", ");
            }
            // A trailing void parameter is C's `...`.
            if i == params.len() - 1 && p.ty == 0 {
                self.put(b"...");
                break;
            }
            let name = self.str_at(p.name_off);
            self.emit_type_decl(p.ty, name, lvl, depth)?;
        }
        self.put(b")");
        Ok(())
    }

    fn put_array_dim(&mut self, nelems: u32) {
        self.put(b"[");
        self.put_u64(u64::from(nelems));
        self.put(b"]");
    }
}
