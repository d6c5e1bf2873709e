//! The DIEs that make types, one method per DWARF tag: each writes its BTF
//! record at once and, for an aggregate, says what stays open for its
//! children (members, enumerators, parameters, subranges, read below too).

use super::*;

impl<'d> Conv<'_, 'd> {
    /// DW_TAG_base_type: an INT or a FLOAT; the first `int` is kept for
    /// the array index type.
    pub(super) fn base_type_die(&mut self, off: u32, a: &Attrs<'d>) {
        let t = self.base_type(a);
        let (_, id) = self.push_type(off, t);
        if self.int_id.is_none() && self.name_bytes(a) == Some(b"int") {
            self.int_id = Some(id);
        }
    }

    /// DW_TAG_pointer_type and the qualifiers; a pointer stays open for
    /// clang's btf_type_tag children.
    pub(super) fn pointer_die(&mut self, off: u32, tag: dw::DwTag, a: &Attrs<'d>) -> Option<Open> {
        let ty = a.ty().unwrap_or(0);
        let data = match tag {
            dw::DW_TAG_pointer_type => TypeData::Ptr { ty },
            dw::DW_TAG_const_type => TypeData::Const { ty },
            dw::DW_TAG_volatile_type => TypeData::Volatile { ty },
            _ => TypeData::Restrict { ty },
        };
        let (idx, _) = self.push_type(off, Type::new(0, data));
        (tag == dw::DW_TAG_pointer_type).then_some(Open::Ptr {
            idx,
            tags: Vec::new(),
            gnu: a.gnu_annotation(),
        })
    }

    /// DW_TAG_typedef.
    pub(super) fn typedef_die(&mut self, off: u32, a: &Attrs<'d>) -> Open {
        let name = self.name(a);
        let (idx, _) = self.push_type(
            off,
            Type::new(
                name,
                TypeData::Typedef {
                    ty: a.ty().unwrap_or(0),
                },
            ),
        );
        Open::Typedef { idx }
    }

    /// DW_TAG_structure_type, DW_TAG_class_type and DW_TAG_union_type: a
    /// STRUCT or UNION open for its members, or a FWD for a declaration.
    pub(super) fn struct_die(&mut self, off: u32, tag: dw::DwTag, a: &Attrs<'d>) -> Open {
        let name = self.name(a);
        let is_union = tag == dw::DW_TAG_union_type;
        if a.declaration() {
            let mut t = Type::new(name, TypeData::Fwd);
            t.kind_flag = is_union;
            self.push_type(off, t);
            // Children of a declaration (C++ members) are not read.
            Open::Other { var: None }
        } else {
            let size = a.byte_size().unwrap_or(0) as u32;
            let members = Records::default();
            let data = if is_union {
                TypeData::Union { size, members }
            } else {
                TypeData::Struct { size, members }
            };
            let (idx, _) = self.push_type(off, Type::new(name, data));
            Open::Struct {
                idx,
                is_union,
                start: self.members.len(),
                gnu: a.gnu_annotation(),
            }
        }
    }

    /// DW_TAG_enumeration_type: an ENUM or ENUM64 open for its values.
    pub(super) fn enum_die(&mut self, off: u32, a: &Attrs<'d>) -> Open {
        let name = self.name(a);
        // pahole takes an enum without a size (a declaration) as int.
        let size = a.byte_size().filter(|&b| b != 0).unwrap_or(4);
        // Signedness comes from the underlying type (DW_AT_type),
        // resolved in `finish`; 64-bit enums become ENUM64.
        let is64 = size > 4;
        let data = if is64 {
            TypeData::Enum64 {
                size: size as u32,
                values: Vec::new(),
            }
        } else {
            TypeData::Enum {
                size: size as u32,
                values: Records::default(),
            }
        };
        let (idx, _) = self.push_type(off, Type::new(name, data));
        let signed = a
            .ty()
            .and_then(|t| self.base_encoding_of(t))
            .is_some_and(|e| {
                e == dw::DW_ATE_signed.0 as u64 || e == dw::DW_ATE_signed_char.0 as u64
            });
        let start = if is64 {
            self.values64.len()
        } else {
            self.values.len()
        };
        Open::Enum {
            idx,
            signed,
            is64,
            start,
        }
    }

    /// DW_TAG_array_type: an ARRAY open for its subranges, its index type
    /// set in `finish`.
    pub(super) fn array_die(&mut self, off: u32, a: &Attrs<'d>) -> Open {
        self.needs_index = true;
        let (idx, _) = self.push_type(
            off,
            Type::new(
                0,
                TypeData::Array(Array {
                    elem: a.ty().unwrap_or(0),
                    index: INDEX_PENDING,
                    nelems: 0,
                }),
            ),
        );
        Open::Array {
            idx,
            start: self.dims.len(),
        }
    }

    /// DW_TAG_subroutine_type: a FUNC_PROTO open for its parameters.
    pub(super) fn subroutine_die(&mut self, off: u32, a: &Attrs<'d>) -> Open {
        let (idx, _) = self.push_type(
            off,
            Type::new(
                0,
                TypeData::FuncProto {
                    ret: a.ty().unwrap_or(0),
                    params: Records::default(),
                },
            ),
        );
        Open::Proto {
            idx,
            start: self.params.len(),
        }
    }

    /// DW_AT_encoding of a base type DIE read earlier in this unit.
    fn base_encoding_of(&self, off: u32) -> Option<u64> {
        let mut entries = self.unit.entries_at_offset(UnitOffset(off as usize)).ok()?;
        let (_, e) = entries.next_dfs().ok()??;
        match e.attr_value(dw::DW_AT_encoding).ok()?? {
            AttributeValue::Encoding(enc) => Some(u64::from(enc.0)),
            v => v.udata_value(),
        }
    }

    fn base_type(&mut self, a: &Attrs<'d>) -> Type {
        let mut name = self.name_bytes(a).unwrap_or(b"");
        let bits = a
            .bit_size()
            .or(a.byte_size().map(|b| b.saturating_mul(8)))
            .unwrap_or(0);
        let mut size = bits.div_ceil(8);
        let enc = a.encoding().unwrap_or(0) as u8;
        if enc == dw::DW_ATE_float.0 || enc == dw::DW_ATE_complex_float.0 {
            // pahole (--btf_gen_floats) writes FLOAT; the kernel accepts
            // sizes 2, 4, 8, 12 and 16.
            if matches!(size, 2 | 4 | 8 | 12 | 16) {
                let n = self.b.add_str(name);
                return Type::new(n, TypeData::Float { size: size as u32 });
            }
        }
        let encoding = if enc == dw::DW_ATE_signed.0 || enc == dw::DW_ATE_signed_char.0 {
            BTF_INT_SIGNED
        } else if enc == dw::DW_ATE_boolean.0 {
            BTF_INT_BOOL
        } else {
            0
        };
        // DWARF 5 producers emit odd-sized ints for location expressions
        // (DW_ATE_unsigned_24): pahole replaces them by a fake 4-byte int.
        if size == 0 || !size.is_power_of_two() || size > 16 {
            name = b"__SANITIZED_FAKE_INT__";
            size = 4;
        }
        let n = self.b.add_str(name);
        Type::new(
            n,
            TypeData::Int {
                size: size as u32,
                encoding,
                offset: 0,
                bits: (size * 8) as u8,
            },
        )
    }

    /// DW_TAG_member of the open STRUCT or UNION.
    pub(super) fn member(&mut self, die: &Die<'d>) {
        let Some(&(
            _,
            Open::Struct {
                idx,
                is_union,
                start,
                ..
            },
        )) = self.stack.last()
        else {
            return;
        };
        let a = &die.attrs;
        // A struct member without a location is static (C++): pahole
        // leaves it out. Union members have no location: offset 0.
        if !is_union && a.member_location().is_none() && a.data_bit_offset().is_none() {
            return;
        }
        let name = self.name(a);
        let byte_offset = a.member_location().unwrap_or(0);
        let bits = a.bit_size().unwrap_or(0);
        let mut bit_offset = a.data_bit_offset().unwrap_or(byte_offset.saturating_mul(8));
        let member_idx = self.members.len().saturating_sub(start);
        if bits != 0 {
            self.bitfields.push((idx, member_idx, bits.min(255) as u32));
            if a.data_bit_offset().is_none() {
                if let Some(dw_bit_offset) = a.bit_offset() {
                    // DWARF 4 counts from the storage unit's most significant
                    // bit; its size may not be known yet: fixed in `finish`.
                    self.bitfix.push(BitFix {
                        idx,
                        member: member_idx,
                        byte_offset,
                        dw_bit_offset,
                        bits,
                        storage_bytes: a.byte_size(),
                        ty: a.ty().unwrap_or(0),
                    });
                }
            }
        }
        bit_offset = bit_offset.min(u64::from(u32::MAX));
        self.members.push(Member {
            name_off: name,
            ty: a.ty().unwrap_or(0),
            offset: bit_offset as u32,
        });
        // GCC's decl tags on the member, then clang's (its children).
        if let Some(first) = a.gnu_annotation() {
            for (kind, value) in self.gnu_chain(first) {
                if kind == Annotation::DeclTag {
                    self.decl_tags.push(DeclTagFix {
                        target: TypeTarget::Type(idx),
                        component: member_idx as i32,
                        value,
                    });
                }
            }
        }
        // The member may carry btf_decl_tag children.
        if die.has_children {
            let depth = self.stack.last().map_or(0, |(d, _)| *d) + 1;
            self.stack.push((depth, Open::Other { var: None }));
            self.member_tags_for = Some((idx, member_idx as i32, depth));
        }
    }

    /// DW_TAG_enumerator of the open ENUM or ENUM64.
    pub(super) fn enumerator(&mut self, die: &Die<'d>) {
        let Some(&(_, Open::Enum { idx, is64, .. })) = self.stack.last() else {
            return;
        };
        let a = &die.attrs;
        let name = self.name(a);
        let value: i64 = match a.const_value() {
            Some(Const::Signed(s)) => s,
            Some(Const::Unsigned(u)) => u as i64,
            _ => 0,
        };
        if is64 {
            self.values64.push(Enum64Value {
                name_off: name,
                val: value as u64,
            });
        } else {
            // libbpf marks a 32-bit enum signed as soon as one value is negative.
            if value < 0 {
                if let Some(t) = self.b.types.get_mut(idx) {
                    t.kind_flag = true;
                }
            }
            self.values.push(EnumValue {
                name_off: name,
                val: value as u32,
            });
        }
    }

    /// DW_TAG_formal_parameter or DW_TAG_unspecified_parameters (varargs) of
    /// the open FUNC_PROTO.
    pub(super) fn param(&mut self, die: &Die<'d>) {
        if !matches!(self.stack.last(), Some((_, Open::Proto { .. }))) {
            return;
        }
        let p = if die.tag == dw::DW_TAG_unspecified_parameters {
            // Varargs: a last parameter with neither name nor type.
            Param { name_off: 0, ty: 0 }
        } else {
            let a = &die.attrs;
            Param {
                name_off: self.name(a),
                ty: a.ty().unwrap_or(0),
            }
        };
        self.params.push(p);
    }

    /// DW_TAG_subrange_type of the open ARRAY: one dimension.
    pub(super) fn subrange(&mut self, die: &Die<'d>) {
        let a = &die.attrs;
        // An unbounded dimension (flexible array) has 0 elements.
        let n = match (a.count(), a.upper_bound()) {
            (Some(c), _) => c,
            (None, Some(u)) => u.wrapping_add(1),
            (None, None) => 0,
        };
        self.dims.push(n as u32);
    }
}
