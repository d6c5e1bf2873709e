//! C names of BTF types and C prototypes of BTF functions, with C's
//! declarator syntax: `char *const p`, `int (*handler)(void *)`,
//! `char (*names)[16]`, `void (*signal(int sig, void (*func)(int)))(int)`.
//!
//! Bad BTF (ids out of range, reference cycles) gives a placeholder in the
//! text, never a panic: these are for display.

use crate::{Btf, Kind, TypeData, TypeId};

/// Nested declarators deeper than this are taken for a reference cycle.
const MAX_DEPTH: usize = 64;

/// Parameters written in one declaration at most, nested ones included. Bad
/// BTF can fan out exponentially (a prototype whose every parameter points
/// to one prototype whose every parameter points to another ...), and no
/// real declaration comes near this.
const MAX_PARAMS: usize = 1024;

/// The C name of a type, as in a cast: `const char *`, `struct sk_buff`,
/// `int (*)(void *)`, `u8 [16]`.
pub fn type_name(btf: &Btf, id: TypeId) -> String {
    declaration(btf, id, "")
}

/// A declaration of `name` with type `id`: `struct rq runqueues`,
/// `char *buf`, `void (*fn)(int)`.
pub fn declaration(btf: &Btf, id: TypeId, name: &str) -> String {
    declare(btf, id, name.to_owned(), &mut MAX_PARAMS.clone())
}

/// The C prototype of a FUNC: `ssize_t wakeup_show(struct kobject *kobj,
/// struct kobj_attribute *attr, char *buf)`. For any other kind, its type name.
pub fn func_prototype(btf: &Btf, func_id: TypeId) -> String {
    match btf.type_by_id(func_id).map(|t| (t, &t.data)) {
        Some((t, TypeData::Func { proto, .. })) => {
            let name = btf.name_of(t).unwrap_or("?");
            declare(btf, *proto, name.to_owned(), &mut MAX_PARAMS.clone())
        }
        _ => type_name(btf, func_id),
    }
}

fn named(btf: &Btf, name_off: u32) -> &str {
    btf.str_at(name_off).unwrap_or("?")
}

/// `base` followed by the declarator `inner`, with a space where C needs one.
fn join(base: &str, inner: &str) -> String {
    if inner.is_empty() {
        base.to_owned()
    } else {
        format!("{base} {inner}")
    }
}

/// Walks from the declared name outwards: each pointer, array or function
/// wraps the declarator built so far, until a named base type ends it.
/// `budget` is how many more parameters may be written (then `...`).
fn declare(btf: &Btf, mut id: TypeId, mut inner: String, budget: &mut usize) -> String {
    // Qualifiers met directly above a base type, written before it
    // (`const char`) rather than after it.
    let mut prefix = String::new();
    for _ in 0..MAX_DEPTH {
        if id == 0 {
            return join(&format!("{prefix}void"), &inner);
        }
        let Some(t) = btf.type_by_id(id) else {
            return join(&format!("{prefix}<invalid type {id}>"), &inner);
        };
        let name = named(btf, t.name_off);
        let base = |kw: &str| {
            let name = if name.is_empty() { "(anon)" } else { name };
            let kw = if kw.is_empty() {
                String::new()
            } else {
                format!("{kw} ")
            };
            join(&format!("{prefix}{kw}{name}"), &inner)
        };
        match &t.data {
            TypeData::Int { .. } | TypeData::Float { .. } | TypeData::Typedef { .. } => {
                return base("")
            }
            TypeData::Struct { .. } => return base("struct"),
            TypeData::Union { .. } => return base("union"),
            TypeData::Enum { .. } | TypeData::Enum64 { .. } => return base("enum"),
            TypeData::Fwd => return base(if t.kind_flag { "union" } else { "struct" }),
            TypeData::Ptr { ty } => {
                inner = format!("*{inner}");
                id = *ty;
            }
            // Type tags (`__user`, `__rcu`) are annotations, not C types.
            TypeData::TypeTag { ty } => id = *ty,
            TypeData::Array(a) => {
                if inner.starts_with('*') {
                    inner = format!("({inner})");
                }
                inner = format!("{inner}[{}]", a.nelems);
                id = a.elem;
            }
            TypeData::FuncProto { ret, params } => {
                if inner.starts_with('*') {
                    inner = format!("({inner})");
                }
                let list = param_list(btf, params, budget);
                inner = format!("{inner}({list})");
                id = *ret;
            }
            TypeData::Func { proto, .. } => id = *proto,
            _ => {
                // A qualifier, or a kind with no C type (Kind::is_c_type).
                let (Some(q), Some(ty)) = (t.kind().qualifier_keyword(), t.ref_type()) else {
                    debug_assert!(!t.kind().is_c_type());
                    return join(&format!("{prefix}{} {name}", t.kind_name()), &inner);
                };
                if qualifies_base(btf, ty) {
                    prefix.push_str(q);
                    prefix.push(' ');
                } else {
                    inner = join(q, &inner);
                }
                id = ty;
            }
        }
    }
    join("<type cycle>", &inner)
}

/// Whether qualifiers on `id` belong before a base type (`const char`)
/// because only qualifiers and tags stand between them.
fn qualifies_base(btf: &Btf, mut id: TypeId) -> bool {
    for _ in 0..MAX_DEPTH {
        let Some(t) = btf.type_by_id(id) else {
            return true;
        };
        match t.ref_type_in(Kind::is_modifier) {
            Some(ty) => id = ty,
            None => {
                return !matches!(
                    t.data,
                    TypeData::Ptr { .. }
                        | TypeData::Array(_)
                        | TypeData::FuncProto { .. }
                        | TypeData::Func { .. }
                )
            }
        }
    }
    true
}

fn param_list(btf: &Btf, params: &[crate::Param], budget: &mut usize) -> String {
    if params.is_empty() {
        return "void".to_owned();
    }
    let mut list = Vec::with_capacity(params.len().min(*budget + 1));
    for p in params {
        // A last parameter of type void without a name is `...`, and so is
        // what is left when the budget runs out.
        if *budget == 0 || (p.ty == 0 && p.name_off == 0) {
            list.push("...".to_owned());
            break;
        }
        *budget -= 1;
        list.push(declare(
            btf,
            p.ty,
            named(btf, p.name_off).to_owned(),
            budget,
        ));
    }
    list.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Array, Param, Type};

    fn int(btf: &mut Btf, name: &str, size: u32) -> TypeId {
        let off = btf.add_str(name);
        btf.add_type(Type::new(
            off,
            TypeData::Int {
                size,
                encoding: 1,
                offset: 0,
                bits: (size * 8) as u8,
            },
        ))
    }

    fn ty(btf: &mut Btf, data: TypeData) -> TypeId {
        btf.add_type(Type::new(0, data))
    }

    fn param(btf: &mut Btf, name: &str, ty: TypeId) -> Param {
        Param {
            name_off: btf.add_str(name),
            ty,
        }
    }

    /// Expected strings are what a C compiler accepts for the same type
    /// (written by hand, checked against gcc's -Wall with no warning).
    #[test]
    fn declarators_of_pointers_and_arrays() {
        let mut b = Btf::new();
        let (int_t, char_t, p_cchar) = int_char_and_const_char_ptr(&mut b);
        assert_eq!(type_name(&b, p_cchar), "const char *");
        let p_char = ty(&mut b, TypeData::Ptr { ty: char_t });
        let cp_char = ty(&mut b, TypeData::Const { ty: p_char });
        assert_eq!(declaration(&b, cp_char, "p"), "char *const p");
        let arr = ty(
            &mut b,
            TypeData::Array(Array {
                elem: char_t,
                index: int_t,
                nelems: 16,
            }),
        );
        let p_arr = ty(&mut b, TypeData::Ptr { ty: arr });
        assert_eq!(declaration(&b, p_arr, "names"), "char (*names)[16]");
        assert_eq!(type_name(&b, arr), "char [16]");
        let arr2 = ty(
            &mut b,
            TypeData::Array(Array {
                elem: arr,
                index: int_t,
                nelems: 2,
            }),
        );
        assert_eq!(declaration(&b, arr2, "m"), "char m[2][16]");
    }

    /// `int`, `char` and `const char *`.
    fn int_char_and_const_char_ptr(b: &mut Btf) -> (TypeId, TypeId, TypeId) {
        let int_t = int(b, "int", 4);
        let char_t = int(b, "char", 1);
        let cchar = ty(b, TypeData::Const { ty: char_t });
        (int_t, char_t, ty(b, TypeData::Ptr { ty: cchar }))
    }

    #[test]
    fn declarators_of_function_pointers_and_prototypes() {
        let mut b = Btf::new();
        let (int_t, _, p_cchar) = int_char_and_const_char_ptr(&mut b);
        let p_void = ty(&mut b, TypeData::Ptr { ty: 0 });
        let pi = param(&mut b, "data", p_void);
        let handler = ty(
            &mut b,
            TypeData::FuncProto {
                ret: int_t,
                params: vec![pi].into(),
            },
        );
        let p_handler = ty(&mut b, TypeData::Ptr { ty: handler });
        assert_eq!(declaration(&b, p_handler, "fn"), "int (*fn)(void *data)");
        assert_eq!(type_name(&b, p_handler), "int (*)(void *data)");

        // void (*signal(int sig, void (*func)(int)))(int)
        let pint = Param {
            name_off: 0,
            ty: int_t,
        };
        let sighandler = ty(
            &mut b,
            TypeData::FuncProto {
                ret: 0,
                params: vec![pint].into(),
            },
        );
        let p_sighandler = ty(&mut b, TypeData::Ptr { ty: sighandler });
        let sig = param(&mut b, "sig", int_t);
        let func = param(&mut b, "func", p_sighandler);
        let proto = ty(
            &mut b,
            TypeData::FuncProto {
                ret: p_sighandler,
                params: vec![sig, func].into(),
            },
        );
        let name = b.add_str("signal");
        let f = b.add_type(Type::new(name, TypeData::Func { proto, linkage: 0 }));
        assert_eq!(
            func_prototype(&b, f),
            "void (*signal(int sig, void (*func)(int)))(int)"
        );

        let fmt = param(&mut b, "fmt", p_cchar);
        let dots = Param { name_off: 0, ty: 0 };
        let proto = ty(
            &mut b,
            TypeData::FuncProto {
                ret: int_t,
                params: vec![fmt, dots].into(),
            },
        );
        let name = b.add_str("printk");
        let f = b.add_type(Type::new(name, TypeData::Func { proto, linkage: 1 }));
        assert_eq!(func_prototype(&b, f), "int printk(const char *fmt, ...)");

        let proto = ty(
            &mut b,
            TypeData::FuncProto {
                ret: 0,
                params: Default::default(),
            },
        );
        let name = b.add_str("schedule");
        let f = b.add_type(Type::new(name, TypeData::Func { proto, linkage: 1 }));
        assert_eq!(func_prototype(&b, f), "void schedule(void)");
    }

    #[test]
    fn declarators_of_structs_and_placeholders() {
        let mut b = Btf::new();
        let sname = b.add_str("kobject");
        let s = b.add_type(Type::new(
            sname,
            TypeData::Struct {
                size: 0,
                members: Default::default(),
            },
        ));
        let ps = ty(&mut b, TypeData::Ptr { ty: s });
        let vs = ty(&mut b, TypeData::Volatile { ty: ps });
        assert_eq!(declaration(&b, vs, "k"), "struct kobject *volatile k");
        let mut fwd = Type::new(sname, TypeData::Fwd);
        fwd.kind_flag = true;
        let fwd = b.add_type(fwd);
        assert_eq!(type_name(&b, fwd), "union kobject");

        // A pointer cycle and a dangling id: placeholders, no panic.
        let cyc = ty(&mut b, TypeData::Ptr { ty: 0 });
        if let Some(t) = b.type_by_id_mut(cyc) {
            t.data = TypeData::Ptr { ty: cyc };
        }
        assert!(type_name(&b, cyc).starts_with("<type cycle>"));
        assert_eq!(type_name(&b, 9999), "<invalid type 9999>");
    }

    /// Forty levels of prototypes whose two parameters both point to the
    /// next level would be 2^40 parameters: the budget writes `...` instead
    /// (found by the `attach` fuzz target as a 14-second input).
    #[test]
    fn exponential_prototypes_are_cut() {
        let mut b = Btf::new();
        let mut next = int(&mut b, "int", 4);
        for _ in 0..40 {
            let p = ty(&mut b, TypeData::Ptr { ty: next });
            let params = vec![param(&mut b, "a", p), param(&mut b, "b", p)];
            next = ty(
                &mut b,
                TypeData::FuncProto {
                    ret: 0,
                    params: params.into(),
                },
            );
        }
        let text = type_name(&b, next);
        assert!(text.contains("..."), "{text}");
        assert!(text.len() < 1 << 20, "{} bytes", text.len());
    }
}
