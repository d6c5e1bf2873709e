//! `btf_func_proto_check`: a FUNC_PROTO's return type and parameters.

use super::names::valid_identifier;
use super::*;

impl Validator<'_> {
    /// `btf_func_proto_check`: the return type and every parameter resolve
    /// to a type with a size; only the last parameter may be void (varargs).
    pub(super) fn func_proto_check(&mut self, id: TypeId) -> Step {
        let Some(TypeData::FuncProto { ret, params }) = self.ty(id).map(|t| &t.data) else {
            return Ok(());
        };
        if *ret != 0 {
            self.check_func_type(*ret, &"return type")?;
        }
        let mut params = &params[..];
        if let Some((last, rest)) = params.split_last() {
            if last.ty == 0 {
                if last.name_off != 0 {
                    return Err(Fail::Problem(
                        Rule::Func,
                        format!("the varargs parameter #{} has a name", params.len()),
                    ));
                }
                params = rest;
            }
        }
        for (i, p) in params.iter().enumerate() {
            let what = format_args!("parameter #{}", i + 1);
            if self.kind(p.ty).is_none() {
                return Err(Fail::Problem(
                    Rule::Func,
                    format!("{what} has {}", self.describe(p.ty)),
                ));
            }
            if p.name_off != 0 && !self.name(p.name_off).is_some_and(valid_identifier) {
                return Err(Fail::Problem(
                    Rule::Name,
                    format!(
                        "{what} name '{}' is not a valid identifier",
                        lossy(self.btf, p.name_off)
                    ),
                ));
            }
            self.check_func_type(p.ty, &what)?;
        }
        Ok(())
    }

    fn check_func_type(&mut self, ty: TypeId, what: &dyn fmt::Display) -> Step {
        let Some(k) = self.kind(ty) else {
            return Err(Fail::Problem(
                Rule::Func,
                format!("{what} is {}", self.describe(ty)),
            ));
        };
        if is_source_only(k) {
            return Err(Fail::Problem(
                Rule::Func,
                format!("{what} is {}, which is not a type", self.describe(ty)),
            ));
        }
        if self.is_bad(ty) {
            return Err(Fail::Silent);
        }
        if needs_resolve(k) && !self.is_resolved(ty) && !self.resolve(ty) {
            return Err(Fail::Silent);
        }
        if self.type_id_size(ty).is_none() {
            return Err(Fail::Problem(
                Rule::Func,
                format!("{what} {} has no size", self.describe(ty)),
            ));
        }
        Ok(())
    }
}
