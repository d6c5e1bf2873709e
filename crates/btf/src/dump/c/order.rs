//! Phase 1: the topological order of named definitions (see the module
//! comment in `mod.rs` for strong and weak links).

use std::io;

use super::{invalid, too_deep, Dumper, OrderState, MAX_DEPTH};
use crate::{Kind, TypeData, TypeId};

impl Dumper<'_> {
    /// Queues, in dependency order, the definitions that `id` needs and
    /// `id` itself if it is one. Returns whether the link that reached `id`
    /// is strong (its target must be complete before the referrer).
    /// `through_ptr`: the path from the referring definition crossed a pointer.
    pub(super) fn order(&mut self, id: TypeId, through_ptr: bool, depth: u32) -> io::Result<bool> {
        let st = self.state[id as usize].order;
        if st == OrderState::Ordered {
            // Already defined or queued: typedefs may refer to it freely.
            return Ok(true);
        }
        let Some(t) = self.get(id) else {
            return Ok(true);
        };
        if st == OrderState::Ordering {
            let composite = matches!(t.data, TypeData::Struct { .. } | TypeData::Union { .. });
            if composite && through_ptr && t.name_off != 0 {
                // A loop through a pointer: a forward declaration breaks it.
                return Ok(false);
            }
            return Err(invalid(format!("unsatisfiable type cycle, id:[{id}]")));
        }
        if depth > MAX_DEPTH {
            return Err(too_deep(id));
        }
        self.step(id)?;
        let depth = depth + 1;
        match &t.data {
            TypeData::Int { .. } | TypeData::Float { .. } => {
                self.state[id as usize].order = OrderState::Ordered;
                Ok(false)
            }
            TypeData::Ptr { ty } => {
                let strong = self.order(*ty, true, depth);
                self.state[id as usize].order = OrderState::Ordered;
                strong
            }
            TypeData::Array(a) => self.order(a.elem, false, depth),
            TypeData::Struct { members, .. } | TypeData::Union { members, .. } => {
                // A named struct behind a pointer only needs a forward
                // declaration; an anonymous one is written inline, so
                // everything it embeds must come first.
                if through_ptr && t.name_off != 0 {
                    return Ok(false);
                }
                self.state[id as usize].order = OrderState::Ordering;
                for m in members {
                    self.order(m.ty, false, depth)?;
                }
                if t.name_off != 0 {
                    self.queue.push(id);
                }
                self.state[id as usize].order = OrderState::Ordered;
                Ok(true)
            }
            TypeData::Enum { .. } | TypeData::Enum64 { .. } | TypeData::Fwd => {
                // Named ones are top-level declarations; so are anonymous
                // enums that no type refers to (global constants).
                if t.name_off != 0 || !self.state[id as usize].referenced {
                    self.queue.push(id);
                }
                self.state[id as usize].order = OrderState::Ordered;
                Ok(true)
            }
            TypeData::Typedef { ty } => {
                let strong = self.order(*ty, through_ptr, depth)?;
                // Like a struct: behind a pointer, a weak target lets the
                // typedef wait until something embeds it.
                if through_ptr && !strong {
                    return Ok(false);
                }
                self.queue.push(id);
                self.state[id as usize].order = OrderState::Ordered;
                Ok(true)
            }
            TypeData::FuncProto { ret, params } => {
                let mut strong = self.order(*ret, through_ptr, depth)?;
                for p in params {
                    strong |= self.order(p.ty, through_ptr, depth)?;
                }
                Ok(strong)
            }
            _ => match t.ref_type_in(Kind::is_modifier) {
                Some(ty) => self.order(ty, through_ptr, depth),
                None => {
                    // Not part of a C header of types.
                    debug_assert!(!t.kind().is_c_type());
                    self.state[id as usize].order = OrderState::Ordered;
                    Ok(false)
                }
            },
        }
    }
}
