//! Evaluating expressions to typed values.
//!
//! A [`Value`] is lazy: a typed place in memory (read when printed or used),
//! or a computed scalar. So `&x`, `per_cpu(x, 1)` and `container_of` never
//! read `x` itself, and an unreadable place is an error only where it is read.

use btf::{TypeData, TypeId};

use crate::error::{Error, Result};
use crate::message::quoted;
use crate::parse::{Arg, Expr, Parser, TypeName};
use crate::program::Program;
use crate::types;

/// Where a value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loc {
    /// In memory at this address; a bitfield has its bit offset and size.
    Mem {
        /// A kernel virtual address: the value's, or for a bitfield the
        /// address of the struct or union that holds it.
        addr: u64,
        /// For a bitfield, its offset in bits from `addr`; else 0.
        bit: u32,
        /// For a bitfield, its width in bits; 0 for anything else.
        bits: u32,
    },
    /// A computed scalar (its bits, zero- or sign-extended to 64).
    Imm(u64),
}

/// A typed value: a type of the program's BTF and where the value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Value {
    /// Its type, an id in the program's BTF (which holds, past the loaded
    /// types, any the evaluator added: `unsigned long` for a literal when
    /// the BTF has none, pointer types for `&`).
    pub ty: TypeId,
    /// Where it is.
    pub loc: Loc,
}

impl Value {
    /// The value of type `ty` in memory at the kernel virtual address
    /// `addr` (not a bitfield).
    pub fn at(ty: TypeId, addr: u64) -> Value {
        Value {
            ty,
            loc: Loc::Mem {
                addr,
                bit: 0,
                bits: 0,
            },
        }
    }

    /// The address of a value in memory that has one: None for a computed
    /// scalar and for a bitfield.
    pub fn address(&self) -> Option<u64> {
        match self.loc {
            Loc::Mem { addr, bits: 0, .. } => Some(addr),
            _ => None,
        }
    }
}

/// What an expression gives: one value, or the entries of a list walk.
#[derive(Clone, Debug)]
pub enum Evaluated {
    /// An expression's value.
    One(Value),
    /// The entries a list walk (`list_for_each_entry`, ...) gives, in list
    /// order (an rb-tree's in key order), with what follows the walk
    /// (`->comm`) applied to each.
    Many(Vec<Value>),
}

/// List walks stop here: a corrupt list must not loop forever.
pub const MAX_WALK: usize = 1 << 20;

/// Whether a helper gives a list (its entries) rather than one value.
pub fn is_walk(name: &str) -> bool {
    name.ends_with("for_each_entry") || name.ends_with("for_each")
}

impl Program {
    /// Parses `src` as one expression, with the BTF's typedefs and base
    /// types as the names that start a cast (a name that is also a
    /// variable is the variable).
    pub fn parse(&self, src: &str) -> Result<Expr> {
        let is_type = |n: &str| self.types.contains_key(n) && !self.vars.contains_key(n);
        Parser::new(src, &is_type)?.parse()
    }

    /// Parses and evaluates `src`. The value itself must be readable (an
    /// unmapped place is this expression's error, with its column); what it
    /// contains is read when printed.
    pub fn eval_str(&mut self, src: &str) -> Result<Evaluated> {
        let e = self.parse(src)?;
        let r = self.eval_top(&e)?;
        if let Evaluated::One(v) = &r {
            self.check_readable(v, e.col())?;
        }
        Ok(r)
    }

    fn check_readable(&self, v: &Value, col: usize) -> Result<()> {
        match v.loc {
            Loc::Imm(_) => Ok(()),
            Loc::Mem { bits, .. } if bits > 0 => self.scalar(v, col).map(|_| ()),
            Loc::Mem { addr, .. } => {
                let n = self.btf.resolve_size(v.ty).unwrap_or(1).clamp(1, 4096);
                self.mem
                    .read_vec(addr, n as usize)
                    .map(|_| ())
                    .map_err(Self::mem_err(col))
            }
        }
    }

    /// A walk gives its entries; members and indexes after it
    /// (`list_for_each_entry(...)->comm`) select from each entry.
    fn eval_top(&mut self, e: &Expr) -> Result<Evaluated> {
        let mut chain = Vec::new();
        let mut root = e;
        while let Expr::Member { base, .. } | Expr::Index(base, _, _) = root {
            chain.push(root);
            root = base;
        }
        if let Expr::Call { name, args, col } = root {
            if is_walk(name) {
                let entries = self.walk(name, args, *col)?;
                return entries
                    .into_iter()
                    .map(|v| chain.iter().rev().try_fold(v, |v, op| self.postfix(v, op)))
                    .collect::<Result<Vec<_>>>()
                    .map(Evaluated::Many);
            }
        }
        self.eval(e).map(Evaluated::One)
    }

    /// A member or index expression applied to `base`, its base's value.
    fn postfix(&mut self, base: Value, op: &Expr) -> Result<Value> {
        match op {
            Expr::Member {
                member, arrow, col, ..
            } => {
                let b = if *arrow {
                    self.deref(&base, *col, "->")?
                } else {
                    base
                };
                self.member(&b, member, *col)
            }
            Expr::Index(_, index, col) => {
                let i = self.eval(index)?;
                let i = self.scalar(&i, index.col())?;
                self.index(&base, i as i64, *col)
            }
            _ => self.eval(op),
        }
    }

    fn ty(&mut self, t: &TypeName) -> Result<TypeId> {
        if let Some(id) = self.find_type(&t.base, t.pointers) {
            return Ok(id);
        }
        let name = quoted(&t.base);
        // A bare word that is no type: a typedef the BTF lacks, or a name
        // of something else written where a cast's type goes.
        let bare = !t.base.contains(' ') && !crate::parse::is_keyword(&t.base);
        let msg = if bare && self.vars.contains_key(&t.base) {
            format!("unknown type {name}: a variable, not a type")
        } else if bare {
            format!("unknown type {name}: no typedef or base type of that name in the BTF")
        } else {
            format!("no type {name} in the BTF")
        };
        Err(Error::eval(t.col, msg))
    }

    fn mem_err(col: usize) -> impl Fn(kmem::Error) -> Error {
        move |error| Error::Memory { col, error }
    }

    /// The scalar bits of a value (read from memory if needed), extended to
    /// 64 bits by its signedness.
    pub fn scalar(&self, v: &Value, col: usize) -> Result<u64> {
        let (addr, bit, bits) = match v.loc {
            Loc::Imm(x) => return Ok(x),
            Loc::Mem { addr, bit, bits } => (addr, bit, bits),
        };
        let size = self
            .btf
            .resolve_size(v.ty)
            .filter(|&s| s <= 8)
            .ok_or_else(|| Error::eval(col, format!("{} is not a scalar", self.type_name(v.ty))))?;
        let signed = self.is_signed(v.ty);
        if bits > 0 {
            let first = u64::from(bit / 8);
            let span = (u64::from(bit % 8) + u64::from(bits)).div_ceil(8) as usize;
            let mut b = [0u8; 16];
            self.mem
                .read_virt(addr + first, &mut b[..span])
                .map_err(Self::mem_err(col))?;
            let raw = u128::from_le_bytes(b) >> (bit % 8);
            let mask = (1u128 << bits) - 1;
            let x = (raw & mask) as u64;
            return Ok(if signed && bits < 64 && x >> (bits - 1) & 1 == 1 {
                x | !((1u64 << bits) - 1)
            } else {
                x
            });
        }
        let mut b = [0u8; 8];
        self.mem
            .read_virt(addr, &mut b[..size as usize])
            .map_err(Self::mem_err(col))?;
        let x = u64::from_le_bytes(b);
        Ok(if signed && size < 8 && x >> (size * 8 - 1) & 1 == 1 {
            x | !((1u64 << (size * 8)) - 1)
        } else {
            x
        })
    }

    /// Whether `ty` (through typedefs and qualifiers) is a signed integer
    /// or a signed enum.
    pub fn is_signed(&self, ty: TypeId) -> bool {
        match self.btf.resolved_data(ty) {
            Some(TypeData::Int { encoding, .. }) => encoding & types::INT_SIGNED != 0,
            Some(TypeData::Enum { .. } | TypeData::Enum64 { .. }) => self
                .btf
                .type_by_id(self.btf.skip_mods_and_typedefs(ty))
                .is_some_and(|t| t.kind_flag),
            _ => false,
        }
    }

    /// A type's C name as drgn spells it: GCC's base type names
    /// (`long unsigned int`, which BTF keeps) in their short form.
    pub fn type_name(&self, ty: TypeId) -> String {
        self.shorten(&btf::cdecl::type_name(&self.btf, ty))
    }

    /// GCC's long base type names in C text (a type or a declaration) in
    /// their short form, as drgn prints them.
    pub fn shorten(&self, c: &str) -> String {
        let mut s = c.to_owned();
        for (long, short) in [
            ("long long unsigned int", "unsigned long long"),
            ("long long int", "long long"),
            ("long unsigned int", "unsigned long"),
            ("long int", "long"),
            ("short unsigned int", "unsigned short"),
            ("short int", "short"),
            ("(anon)", "<anonymous>"),
        ] {
            s = s.replace(long, short);
        }
        s
    }

    /// Whether a value of the type is a number: an integer, enum or pointer.
    pub fn is_scalar(&self, ty: TypeId) -> bool {
        matches!(
            self.btf.resolved_data(ty),
            Some(
                TypeData::Int { .. }
                    | TypeData::Enum { .. }
                    | TypeData::Enum64 { .. }
                    | TypeData::Ptr { .. }
            )
        )
    }

    fn is_pointer_like(&self, ty: TypeId) -> Option<TypeId> {
        match self.btf.resolved_data(ty) {
            Some(TypeData::Ptr { ty }) => Some(*ty),
            _ => None,
        }
    }

    fn long(&mut self, signed: bool) -> TypeId {
        if signed {
            self.int_type("long", 8, true)
        } else {
            self.int_type("unsigned long", 8, false)
        }
    }

    /// Evaluates a parsed expression to one value, lazily: a place in
    /// memory is not read unless the operation needs its contents (`*p`
    /// reads `p`, `&x` reads nothing). A list walk here is an error; see
    /// [`Program::eval_str`].
    pub fn eval(&mut self, e: &Expr) -> Result<Value> {
        match e {
            Expr::Num(n, _) => {
                let ty = self.long(*n <= i64::MAX as u64);
                Ok(Value {
                    ty,
                    loc: Loc::Imm(*n),
                })
            }
            Expr::Name(name, col) => self.name(name, *col),
            Expr::Member { base, .. } | Expr::Index(base, _, _) => {
                let b = self.eval(base)?;
                self.postfix(b, e)
            }
            Expr::Unary(op, inner, col) => self.unary(op, inner, *col),
            Expr::Binary(op, l, r, col) => {
                let a = self.eval(l)?;
                let b = self.eval(r)?;
                self.binary(op, &a, &b, *col)
            }
            Expr::Cast(t, inner, col) => {
                let ty = self.ty(t)?;
                let v = self.eval(inner)?;
                self.cast(ty, &v, *col)
            }
            Expr::SizeOf(t, col) => {
                let ty = self.ty(t)?;
                let n = self
                    .btf
                    .resolve_size(ty)
                    .ok_or_else(|| Error::eval(*col, format!("{} has no size", t.base)))?;
                let ty = self.long(false);
                Ok(Value {
                    ty,
                    loc: Loc::Imm(n),
                })
            }
            Expr::Call { name, args, col } => self.call(name, args, *col),
        }
    }

    fn name(&mut self, name: &str, col: usize) -> Result<Value> {
        if let Some(v) = self.var(name) {
            return Ok(Value::at(v.ty, v.addr));
        }
        if let Some(addrs) = self.ambiguous(name) {
            let list: Vec<String> = addrs.iter().map(|a| format!("{a:#x}")).collect();
            return Err(Error::eval(
                col,
                format!(
                    "{} variables are named {name} (at {}): cast one address to its type",
                    addrs.len(),
                    list.join(", ")
                ),
            ));
        }
        if let Some(&(val, ty)) = self.enumerators.get(name) {
            return Ok(Value {
                ty,
                loc: Loc::Imm(val),
            });
        }
        if let Some(&f) = self.funcs.get(name) {
            if let Some(addr) = self.symbol(name) {
                let proto = match self.btf.type_by_id(f).map(|t| &t.data) {
                    Some(TypeData::Func { proto, .. }) => *proto,
                    _ => 0,
                };
                let ty = self.pointer_to(proto);
                return Ok(Value {
                    ty,
                    loc: Loc::Imm(addr),
                });
            }
        }
        // A linker-script alias (`jiffies = jiffies_64`) has a symbol but
        // no VAR: it is the variable at its address.
        if let Some(v) = self.symbol(name).and_then(|a| self.var_at(a)) {
            return Ok(Value::at(v.ty, v.addr));
        }
        match self.symbol(name) {
            Some(addr) => Err(Error::eval(
                col,
                format!(
                    "{name} ({addr:#x} in kallsyms) has no BTF type: name one, e.g. *(unsigned long *){addr:#x}"
                ),
            )),
            None => Err(Error::eval(col, format!("no variable, function or enumerator {}", quoted(name)))),
        }
    }

    fn deref(&mut self, v: &Value, col: usize, what: &str) -> Result<Value> {
        match self.btf.resolved_data(v.ty) {
            // As in C and drgn: `void *` points at nothing with a value.
            Some(TypeData::Ptr { ty }) if self.btf.skip_mods_and_typedefs(*ty) == 0 => {
                Err(Error::eval(
                    col,
                    format!("{what} cannot dereference {}", self.type_name(v.ty)),
                ))
            }
            Some(TypeData::Ptr { ty }) => {
                let ty = *ty;
                let addr = self.scalar(v, col)?;
                Ok(Value::at(ty, addr))
            }
            Some(TypeData::Array(a)) => {
                let elem = a.elem;
                let addr = v
                    .address()
                    .ok_or_else(|| Error::eval(col, "array not in memory"))?;
                Ok(Value::at(elem, addr))
            }
            _ => Err(Error::eval(
                col,
                format!("{what} needs a pointer, not {}", self.type_name(v.ty)),
            )),
        }
    }

    fn member(&mut self, v: &Value, name: &str, col: usize) -> Result<Value> {
        let outer = self.btf.skip_mods_and_typedefs(v.ty);
        if !matches!(
            self.btf.type_by_id(outer).map(|t| &t.data),
            Some(TypeData::Struct { .. } | TypeData::Union { .. })
        ) {
            return Err(Error::eval(
                col,
                format!("{} is not a struct or union", self.type_name(v.ty)),
            ));
        }
        let f = self.btf.find_member(outer, name).ok_or_else(|| {
            Error::eval(
                col,
                format!("{} has no member {}", self.type_name(v.ty), quoted(name)),
            )
        })?;
        let addr = v
            .address()
            .ok_or_else(|| Error::eval(col, "a member of a value not in memory"))?;
        let byte = f.bit_offset / 8;
        Ok(Value {
            ty: f.ty,
            loc: Loc::Mem {
                addr: addr.wrapping_add(if f.bits > 0 { 0 } else { byte }),
                bit: if f.bits > 0 { f.bit_offset as u32 } else { 0 },
                bits: f.bits,
            },
        })
    }

    fn index(&mut self, v: &Value, i: i64, col: usize) -> Result<Value> {
        let elem_ptr = self.deref(v, col, "[]")?;
        let size = self.btf.resolve_size(elem_ptr.ty).ok_or_else(|| {
            Error::eval(col, format!("{} has no size", self.type_name(elem_ptr.ty)))
        })?;
        let addr = elem_ptr
            .address()
            .unwrap_or(0)
            .wrapping_add((i as u64).wrapping_mul(size));
        Ok(Value::at(elem_ptr.ty, addr))
    }

    fn unary(&mut self, op: &str, inner: &Expr, col: usize) -> Result<Value> {
        let v = self.eval(inner)?;
        match op {
            "*" => self.deref(&v, col, "*"),
            "&" => {
                let addr = v
                    .address()
                    .ok_or_else(|| Error::eval(col, "& needs a value in memory"))?;
                let ty = self.pointer_to(v.ty);
                Ok(Value {
                    ty,
                    loc: Loc::Imm(addr),
                })
            }
            "+" => Ok(v),
            _ => {
                let x = self.scalar(&v, col)?;
                let signed = self.is_signed(v.ty);
                let (x, ty) = match op {
                    "-" => (x.wrapping_neg(), self.long(true)),
                    "~" => (!x, self.long(signed)),
                    _ => (u64::from(x == 0), self.int_type("int", 4, true)),
                };
                Ok(Value {
                    ty,
                    loc: Loc::Imm(x),
                })
            }
        }
    }

    fn binary(&mut self, op: &str, a: &Value, b: &Value, col: usize) -> Result<Value> {
        let pa = self.is_pointer_like(a.ty);
        let pb = self.is_pointer_like(b.ty);
        let x = self.scalar(a, col)?;
        let y = self.scalar(b, col)?;
        let elem_size = |p: &Program, t: TypeId| p.btf.resolve_size(t).unwrap_or(1).max(1);
        // Pointer arithmetic: scaled by the pointee's size.
        match (op, pa, pb) {
            ("+", Some(t), None) | ("-", Some(t), None) => {
                let d = y.wrapping_mul(elem_size(self, t));
                let r = if op == "+" {
                    x.wrapping_add(d)
                } else {
                    x.wrapping_sub(d)
                };
                return Ok(Value {
                    ty: a.ty,
                    loc: Loc::Imm(r),
                });
            }
            ("+", None, Some(t)) => {
                return Ok(Value {
                    ty: b.ty,
                    loc: Loc::Imm(y.wrapping_add(x.wrapping_mul(elem_size(self, t)))),
                })
            }
            ("-", Some(t), Some(_)) => {
                let ty = self.long(true);
                let d = (x.wrapping_sub(y) as i64) / elem_size(self, t) as i64;
                return Ok(Value {
                    ty,
                    loc: Loc::Imm(d as u64),
                });
            }
            _ => {}
        }
        let signed = self.is_signed(a.ty) && self.is_signed(b.ty);
        let (sx, sy) = (x as i64, y as i64);
        let cmp = |c: bool| u64::from(c);
        let r = match op {
            "+" => x.wrapping_add(y),
            "-" => x.wrapping_sub(y),
            "*" => x.wrapping_mul(y),
            "/" | "%" => {
                if y == 0 {
                    return Err(Error::eval(col, "division by zero"));
                }
                match (op, signed) {
                    ("/", true) => sx.wrapping_div(sy) as u64,
                    ("/", false) => x / y,
                    (_, true) => sx.wrapping_rem(sy) as u64,
                    _ => x % y,
                }
            }
            "<<" => x.checked_shl(y as u32).unwrap_or(0),
            ">>" => {
                if signed {
                    sx.checked_shr(y as u32)
                        .unwrap_or(if sx < 0 { -1 } else { 0 }) as u64
                } else {
                    x.checked_shr(y as u32).unwrap_or(0)
                }
            }
            "&" => x & y,
            "|" => x | y,
            "^" => x ^ y,
            "&&" => cmp(x != 0 && y != 0),
            "||" => cmp(x != 0 || y != 0),
            "==" => cmp(x == y),
            "!=" => cmp(x != y),
            "<" => cmp(if signed { sx < sy } else { x < y }),
            ">" => cmp(if signed { sx > sy } else { x > y }),
            "<=" => cmp(if signed { sx <= sy } else { x <= y }),
            _ => cmp(if signed { sx >= sy } else { x >= y }),
        };
        let ty = if matches!(op, "&&" | "||" | "==" | "!=" | "<" | ">" | "<=" | ">=") {
            self.int_type("int", 4, true)
        } else {
            self.long(signed)
        };
        Ok(Value {
            ty,
            loc: Loc::Imm(r),
        })
    }

    fn cast(&mut self, ty: TypeId, v: &Value, col: usize) -> Result<Value> {
        if self.btf.skip_mods_and_typedefs(ty) == 0 {
            return Err(Error::eval(col, "a value cast to void has none"));
        }
        let target = self.btf.resolved_data(ty).cloned();
        match target {
            Some(
                TypeData::Ptr { .. }
                | TypeData::Int { .. }
                | TypeData::Enum { .. }
                | TypeData::Enum64 { .. },
            ) => {
                // Arrays decay to their address.
                let x = match self.btf.resolved_data(v.ty) {
                    Some(TypeData::Array(_)) => v
                        .address()
                        .ok_or_else(|| Error::eval(col, "array not in memory"))?,
                    _ => self.scalar(v, col)?,
                };
                let size = self.btf.resolve_size(ty).unwrap_or(8);
                let x = if size < 8 {
                    let m = x & ((1u64 << (size * 8)) - 1);
                    if self.is_signed(ty) && m >> (size * 8 - 1) & 1 == 1 {
                        m | !((1u64 << (size * 8)) - 1)
                    } else {
                        m
                    }
                } else {
                    x
                };
                Ok(Value {
                    ty,
                    loc: Loc::Imm(x),
                })
            }
            _ => match v.address() {
                // Reinterpreting memory: `(struct foo)x` reads x as a struct foo.
                Some(addr) => Ok(Value::at(ty, addr)),
                None => Err(Error::eval(
                    col,
                    format!("cannot cast a computed value to {}", self.type_name(ty)),
                )),
            },
        }
    }

    fn arg_expr(args: &[Arg], i: usize, col: usize) -> Result<&Expr> {
        match args.get(i) {
            Some(Arg::Expr(e)) => Ok(e),
            _ => Err(Error::eval(
                col,
                format!("argument {} must be an expression", i + 1),
            )),
        }
    }

    fn call(&mut self, name: &str, args: &[Arg], col: usize) -> Result<Value> {
        match name {
            "container_of" => {
                let (Some(Arg::Type(t)), Some(Arg::Path(path, pcol))) = (args.get(1), args.get(2))
                else {
                    return Err(Error::eval(col, "container_of(ptr, type, member)"));
                };
                let ty = self.ty(t)?;
                let p = self.eval(Self::arg_expr(args, 0, col)?)?;
                let addr = self.scalar(&p, col)?;
                let f = types::member_path(&self.btf, ty, path).ok_or_else(|| {
                    Error::eval(
                        *pcol,
                        format!("{} has no member {}", self.type_name(ty), quoted(path)),
                    )
                })?;
                let pty = self.pointer_to(ty);
                Ok(Value {
                    ty: pty,
                    loc: Loc::Imm(addr.wrapping_sub(f.bit_offset / 8)),
                })
            }
            "per_cpu" => {
                let e = Self::arg_expr(args, 0, col)?;
                let v = self.eval(e)?;
                let c = self.eval(Self::arg_expr(args, 1, col)?)?;
                let cpu = self.scalar(&c, col)?;
                let off = self.per_cpu_offset(cpu, col)?;
                let addr = v
                    .address()
                    .ok_or_else(|| Error::eval(e.col(), "per_cpu needs a variable"))?;
                Ok(Value::at(v.ty, addr.wrapping_add(off)))
            }
            "per_cpu_ptr" => {
                let p = self.eval(Self::arg_expr(args, 0, col)?)?;
                let c = self.eval(Self::arg_expr(args, 1, col)?)?;
                let cpu = self.scalar(&c, col)?;
                let off = self.per_cpu_offset(cpu, col)?;
                let x = self.scalar(&p, col)?;
                Ok(Value {
                    ty: p.ty,
                    loc: Loc::Imm(x.wrapping_add(off)),
                })
            }
            _ => Err(Error::eval(
                col,
                format!(
                    "{name} gives a list: use it alone or select members of its entries (->comm)"
                ),
            )),
        }
    }

    /// The address a list head argument names: a pointer's value, or the
    /// address of a head object.
    fn head_address(&mut self, e: &Expr) -> Result<u64> {
        let v = self.eval(e)?;
        if self.is_pointer_like(v.ty).is_some() {
            return self.scalar(&v, e.col());
        }
        v.address()
            .ok_or_else(|| Error::eval(e.col(), "a list head must be in memory"))
    }

    fn read_ptr(&self, addr: u64, col: usize) -> Result<u64> {
        self.mem.read_u64(addr).map_err(Self::mem_err(col))
    }

    /// `list_for_each_entry(type, head, member)` and friends: the entries as
    /// pointers to `type`, in list order (rb-trees in key order).
    fn walk(&mut self, name: &str, args: &[Arg], col: usize) -> Result<Vec<Value>> {
        let (ty, member_off) = match (args.first(), args.get(2)) {
            (Some(Arg::Type(t)), Some(Arg::Path(path, pcol))) => {
                let ty = self.ty(t)?;
                let f = types::member_path(&self.btf, ty, path).ok_or_else(|| {
                    Error::eval(
                        *pcol,
                        format!("{} has no member {}", self.type_name(ty), quoted(path)),
                    )
                })?;
                (Some(ty), f.bit_offset / 8)
            }
            _ => (None, 0),
        };
        let head_expr = if ty.is_some() {
            Self::arg_expr(args, 1, col)?
        } else {
            Self::arg_expr(args, 0, col)?
        };
        let head = self.head_address(head_expr)?;
        let mut nodes = Vec::new();
        let too_long = || {
            Error::eval(
                col,
                format!("{name}: more than {MAX_WALK} entries (a cycle?)"),
            )
        };
        match name {
            "list_for_each_entry" | "list_for_each" => {
                let mut n = self.read_ptr(head, col)?;
                while n != head {
                    if nodes.len() >= MAX_WALK {
                        return Err(too_long());
                    }
                    nodes.push(n);
                    n = self.read_ptr(n, col)?;
                }
            }
            "hlist_for_each_entry" | "hlist_for_each" => {
                let mut n = self.read_ptr(head, col)?;
                while n != 0 {
                    if nodes.len() >= MAX_WALK {
                        return Err(too_long());
                    }
                    nodes.push(n);
                    n = self.read_ptr(n, col)?;
                }
            }
            _ => {
                // rb_root.rb_node; rb_node { __rb_parent_color, rb_right, rb_left }.
                let mut stack = Vec::new();
                let mut n = self.read_ptr(head, col)?;
                loop {
                    while n != 0 {
                        if stack.len() + nodes.len() >= MAX_WALK {
                            return Err(too_long());
                        }
                        stack.push(n);
                        n = self.read_ptr(n + 16, col)?;
                    }
                    let Some(top) = stack.pop() else { break };
                    nodes.push(top);
                    n = self.read_ptr(top + 8, col)?;
                }
            }
        }
        let out_ty = match ty {
            Some(t) => self.pointer_to(t),
            None => {
                let lh = self.find_type("struct list_head", 1).unwrap_or(0);
                if name.starts_with("hlist") {
                    self.find_type("struct hlist_node", 1).unwrap_or(lh)
                } else {
                    lh
                }
            }
        };
        Ok(nodes
            .into_iter()
            .map(|n| Value {
                ty: out_ty,
                loc: Loc::Imm(n.wrapping_sub(member_off)),
            })
            .collect())
    }
}
