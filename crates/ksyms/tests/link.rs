//! BTF linked to a symbol table through `addr=0x` DECL_TAGs, and by name
//! without them. The BTF is built here, so the right answer is known.

use std::path::Path;

use btf::addr_tag;
use btf::builder::{Builder, Linkage};
use btf::Btf;
use ksyms::kallsyms::{self, Hidden};
use ksyms::{BtfIndex, FuncMatch, Table};

/// Two static `wakeup_show`s with different prototypes, as in Debian's
/// kernel (kernel/irq/irqdesc.c, drivers/base/power/sysfs.c), and
/// `jiffies` as a VAR.
fn btf(tags: bool) -> (Btf, u32, u32) {
    let mut b = Builder::new();
    let int = b.add_int("int", 4, btf::format::BTF_INT_SIGNED);
    let func = |b: &mut Builder, param: &str| {
        let proto = b.add_func_proto(int, &[(param, int)]);
        b.add_func("wakeup_show", proto, Linkage::Static)
    };
    let (a, c) = (func(&mut b, "a"), func(&mut b, "c"));
    if tags {
        for (addr, f) in [(0xffffffff81000250, c), (0xffffffff81000110, a)] {
            let name = addr_tag::format(addr, &mut [0; addr_tag::MAX_LEN]).to_owned();
            b.add_decl_tag(&name, f, None);
        }
    }
    b.add_var("jiffies", int, Linkage::Global);
    (b.finish(), a, c)
}

/// The same kernel moved by KASLR: every address 0x1d200000 higher.
const KALLSYMS: &str = "\
ffffffff9e200000 T _stext
ffffffff9e200100 t __pfx_wakeup_show
ffffffff9e200110 t wakeup_show
ffffffff9e200240 t __pfx_wakeup_show
ffffffff9e200250 t wakeup_show
ffffffff9e200300 t wakeup_show.cold
ffffffff9e200400 D jiffies
ffffffff9e200500 T _etext
";

fn table() -> Table {
    Table::new(kallsyms::parse(KALLSYMS.into(), Path::new("k"), Hidden::Error).expect("parse"))
}

#[test]
fn addr_tags_name_each_instance_after_kaslr() {
    let (b, a, c) = btf(true);
    let table = table();
    let mut index = BtfIndex::new(&b);
    assert!(index.has_addr_tags());
    assert_eq!(index.calibrate(&table), 0x1d200000);
    let first = table.lookup(0xffffffff9e200114).expect("first").symbol;
    let second = table.lookup(0xffffffff9e200251).expect("second").symbol;
    assert_eq!(index.match_function(&table, &first), FuncMatch::Exact(a));
    assert_eq!(index.match_function(&table, &second), FuncMatch::Exact(c));
    // The padding before an instance belongs to that instance.
    let pfx = table.lookup(0xffffffff9e200244).expect("pfx").symbol;
    assert_eq!(index.match_function(&table, &pfx), FuncMatch::Exact(c));
    assert_eq!(index.funcs_at(0xffffffff9e200250).collect::<Vec<_>>(), [c]);
}

#[test]
fn without_tags_a_name_match_is_ambiguous() {
    let (b, a, _) = btf(false);
    let table = table();
    let index = BtfIndex::new(&b);
    assert!(!index.has_addr_tags());
    let first = table.lookup(0xffffffff9e200110).expect("first").symbol;
    let m = index.match_function(&table, &first);
    assert_eq!(
        m,
        FuncMatch::ByName {
            func: a,
            funcs: 2,
            instances: 2
        }
    );
    assert!(m.is_ambiguous());
    // A .cold fragment is matched through the function it belongs to.
    let cold = table.by_name("wakeup_show.cold").next().expect("cold");
    assert_eq!(index.match_function(&table, &cold).btf_id(), Some(a));
    assert_eq!(index.vars("jiffies").len(), 1);
    assert_eq!(
        index.match_function(&table, &table.by_name("_stext").next().expect("_stext")),
        FuncMatch::None
    );
}

/// A module's `cleanup_module` is an alias of its exit function: one
/// address, one tag value on two FUNCs, as btfkit's encoder writes them.
#[test]
fn an_alias_is_matched_to_the_tagged_func_of_its_own_name() {
    let mut b = Builder::new();
    let int = b.add_int("int", 4, btf::format::BTF_INT_SIGNED);
    let proto = b.add_func_proto(int, &[]);
    let tag = addr_tag::format(0xffffffff81000110, &mut [0; addr_tag::MAX_LEN]).to_owned();
    let mut ids = Vec::new();
    for name in ["mod_exit", "cleanup_module"] {
        let f = b.add_func(name, proto, Linkage::Static);
        b.add_decl_tag(&tag, f, None);
        ids.push(f);
    }
    let btf = b.finish();
    let text = "ffffffff81000000 T _stext\n\
                ffffffff81000110 t mod_exit\n\
                ffffffff81000110 T cleanup_module\n\
                ffffffff81000200 T _etext\n";
    let table =
        Table::new(kallsyms::parse(text.into(), Path::new("k"), Hidden::Error).expect("parse"));
    let index = BtfIndex::new(&btf);
    for (name, id) in ["mod_exit", "cleanup_module"].into_iter().zip(ids) {
        let sym = table.by_name(name).next().expect(name);
        assert_eq!(
            index.match_function(&table, &sym),
            FuncMatch::Exact(id),
            "{name}"
        );
    }
}
