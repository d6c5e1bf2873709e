//! A dedup that starts before the last types are added.
//!
//! An encoder's last types (the FUNCs its function policy picks once every
//! unit is read, their address tags, the DATASECs) come after the types of
//! every unit and take tens of milliseconds to make on one core, while the
//! other core waits to deduplicate. Passes 2 to 4 (primitive types, structs,
//! FWDs) never look at such types: they visit INTs, enums, FWDs, FLOATs,
//! structs and unions, follow references only from those, and no type that
//! is already there refers to one added after it (its ids were checked to
//! be below the count). So those passes can run over the types made so far
//! while the last ones are added; pass 5 and the compaction then run over
//! all of them in id order, as always. The output is that of
//! [`dedup_owned`] of the whole, byte for byte.
//!
//! The types that may come late are those of kinds the early passes skip
//! (the reference kinds but TYPEDEF, which libbpf 1.8's rules walk with the
//! structs) or make canonical on sight (VAR, DATASEC). A late type of
//! another kind, or a cycle of reference types among the early ones (whose
//! second try by libbpf 1.8's rules starts over), makes
//! [`Appending::finish`] run the whole dedup instead: slower, same output.

use super::{check_ids, dedup_owned, has_ref_cycle, Dedup, DedupOptions, Rules};
use crate::format::*;
use crate::types::TypeId;
use crate::{Btf, Result};

/// A dedup of a BTF that is still growing: [`Appending::take`], then
/// [`Appending::run_ahead`] on one thread while types are added to the BTF
/// on another, then [`Appending::finish`]. In between, the BTF holds only
/// the types added since `take` (ids continue after the taken ones) and is
/// not whole: it is for adding to, not for writing out.
pub struct Appending {
    d: Dedup<'static>,
    opts: DedupOptions,
    /// Passes 2 to 4 have run over the taken types.
    ahead: bool,
}

impl Appending {
    /// Takes the own types of `btf`; the types added to it next get the ids
    /// that follow theirs. `None`, with `btf` untouched, when `btf` has a
    /// base (whose shared candidate table depends on every tag) or `opts`
    /// asks for the string pass (which reads every type): use
    /// [`dedup_owned`] then.
    pub fn take(btf: &mut Btf, opts: &DedupOptions) -> Result<Option<Appending>> {
        if btf.base.is_some() || !opts.keep_strings {
            return Ok(None);
        }
        check_ids(btf)?;
        let types = std::mem::take(&mut btf.types);
        let start_id = btf.start_id;
        btf.start_id += types.len() as TypeId;
        Ok(Some(Appending {
            d: Dedup::new(None, start_id, types, opts.rules),
            opts: opts.clone(),
            ahead: false,
        }))
    }

    /// Passes 2 to 4 over the taken types.
    pub fn run_ahead(&mut self) -> Result<()> {
        if self.opts.rules == Rules::Libbpf1_1 && has_ref_cycle(self.d.start_id, &self.d.types) {
            return Ok(());
        }
        self.d.prep(&self.opts.base_table)?;
        self.d.prim_types(0);
        self.d.struct_types()?;
        self.d.resolve_fwds();
        self.ahead = true;
        Ok(())
    }

    /// Deduplicates `btf`: the BTF given to [`Appending::take`] with the
    /// types added to it since. On error `btf` may be left without its own
    /// types (as [`dedup_owned`] consumes its input): drop it.
    pub fn finish(self, btf: &mut Btf) -> Result<()> {
        let Appending { mut d, opts, ahead } = self;
        // Passes 2 to 4 change the maps, never the types: the BTF is whole
        // again as it would have been without the split.
        let taken = d.types.len();
        let mut types = std::mem::take(&mut d.types);
        types.append(&mut btf.types);
        btf.start_id = d.start_id;
        btf.types = types;
        if !ahead || !btf.types[taken..].iter().all(|t| may_come_late(t.kind())) {
            *btf = dedup_owned(std::mem::take(btf), &opts)?;
            return Ok(());
        }
        check_ids(btf)?;
        d.types = std::mem::take(&mut btf.types);
        d.grow_maps();
        d.prim_types(taken);
        d.collect_func_tags(btf, &btf.strings);
        d.ref_types()?;
        btf.set_types(d.compact_and_remap()?.0);
        Ok(())
    }
}

/// Kinds that passes 2 to 4 skip or make canonical without looking.
fn may_come_late(kind: Kind) -> bool {
    kind.is_ptr_or_modifier()
        || matches!(
            kind,
            BTF_KIND_ARRAY
                | BTF_KIND_FUNC
                | BTF_KIND_FUNC_PROTO
                | BTF_KIND_DECL_TAG
                | BTF_KIND_VAR
                | BTF_KIND_DATASEC
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::*;

    /// Two copies of what two compilation units would describe: `int`,
    /// `struct s { int a; struct s *next; }`, a FWD of `s` behind a
    /// typedef, a prototype `int (struct s *)` and a VAR of the struct.
    fn units(btf: &mut Btf) {
        let (int, s, a, next, var) = (
            btf.add_str("int"),
            btf.add_str("s"),
            btf.add_str("a"),
            btf.add_str("next"),
            btf.add_str("v"),
        );
        let sp = btf.add_str("sp");
        for _ in 0..2 {
            let i = btf.add_type(super::super::int_type(int));
            let st = btf.type_count();
            let ptr = st + 1;
            btf.add_type(Type::new(
                s,
                TypeData::Struct {
                    size: 16,
                    members: vec![
                        Member {
                            name_off: a,
                            ty: i,
                            offset: 0,
                        },
                        Member {
                            name_off: next,
                            ty: ptr,
                            offset: 64,
                        },
                    ]
                    .into(),
                },
            ));
            btf.add_type(Type::new(0, TypeData::Ptr { ty: st }));
            let fwd = btf.add_type(Type::new(s, TypeData::Fwd));
            let fp = btf.add_type(Type::new(0, TypeData::Ptr { ty: fwd }));
            btf.add_type(Type::new(sp, TypeData::Typedef { ty: fp }));
            btf.add_type(Type::new(
                0,
                TypeData::FuncProto {
                    ret: i,
                    params: vec![Param {
                        name_off: 0,
                        ty: ptr,
                    }]
                    .into(),
                },
            ));
            btf.add_type(Type::new(var, TypeData::Var { ty: st, linkage: 1 }));
        }
    }

    /// What an encoder adds last: two FUNCs of one name and prototype at
    /// two addresses, each with its `addr=` tag, and a DATASEC.
    fn late(btf: &mut Btf) {
        let f = btf.add_str("f");
        for addr in ["addr=0x10", "addr=0x20"] {
            let func = btf.add_type(Type::new(
                f,
                TypeData::Func {
                    proto: 7,
                    linkage: 0,
                },
            ));
            let tag = btf.add_str(addr);
            btf.add_type(Type::new(
                tag,
                TypeData::DeclTag {
                    ty: func,
                    component_idx: -1,
                },
            ));
        }
        let data = btf.add_str(".data");
        btf.add_type(Type::new(
            data,
            TypeData::Datasec {
                size: 16,
                vars: vec![VarSecinfo {
                    ty: 8,
                    offset: 0,
                    size: 16,
                }]
                .into(),
            },
        ));
    }

    fn opts() -> DedupOptions {
        DedupOptions {
            keep_strings: true,
            ..Default::default()
        }
    }

    /// `late` added while the first passes run, against `dedup_owned` of
    /// the whole.
    fn same_as_dedup_owned(units: fn(&mut Btf), late: fn(&mut Btf)) {
        let mut whole = Btf::new();
        units(&mut whole);
        late(&mut whole);
        let want = dedup_owned(whole, &opts()).unwrap().to_bytes();

        let mut btf = Btf::new();
        units(&mut btf);
        let count = btf.type_count();
        let mut appending = Appending::take(&mut btf, &opts()).unwrap().unwrap();
        assert_eq!(btf.type_count(), count);
        assert!(btf.own_types().is_empty());
        appending.run_ahead().unwrap();
        late(&mut btf);
        appending.finish(&mut btf).unwrap();
        assert_eq!(btf.to_bytes(), want);
    }

    #[test]
    fn late_funcs_tags_and_datasecs_give_dedup_owned_bytes() {
        same_as_dedup_owned(units, late);
    }

    #[test]
    fn a_late_struct_gives_dedup_owned_bytes() {
        same_as_dedup_owned(units, |btf| {
            late(btf);
            let s = btf.add_str("t");
            btf.add_type(Type::new(
                s,
                TypeData::Struct {
                    size: 0,
                    members: Default::default(),
                },
            ));
        });
    }

    #[test]
    fn a_typedef_cycle_gives_dedup_owned_bytes() {
        // `typedef T *T;` is a cycle of reference types: libbpf 1.8's rules.
        same_as_dedup_owned(
            |btf| {
                units(btf);
                let t = btf.add_str("T");
                let id = btf.type_count();
                btf.add_type(Type::new(t, TypeData::Typedef { ty: id + 1 }));
                btf.add_type(Type::new(0, TypeData::Ptr { ty: id }));
            },
            late,
        );
    }

    #[test]
    fn a_split_btf_or_the_string_pass_is_not_taken() {
        let mut base = Btf::new();
        units(&mut base);
        let mut split = Btf::new_split(std::sync::Arc::new(base));
        assert!(Appending::take(&mut split, &opts()).unwrap().is_none());
        let mut btf = Btf::new();
        units(&mut btf);
        let strings = DedupOptions::default();
        assert!(Appending::take(&mut btf, &strings).unwrap().is_none());
        assert_eq!(btf.type_count(), 17);
    }
}
