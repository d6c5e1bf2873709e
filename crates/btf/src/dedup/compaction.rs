//! Passes 6 and 7: keep the canonical types, renumber them, remap references.

use super::*;

impl Dedup<'_> {
    /// Passes 6 and 7: keep the canonical types, renumber, remap.
    /// Returns the kept types and the emptied list they came from, with its
    /// capacity (see [`super::dedup_owned_with_spare`]).
    pub(super) fn compact_and_remap(mut self) -> Result<(Vec<Type>, Vec<Type>)> {
        // Reuse the hypothetical map as old id -> new id.
        let new_ids = &mut self.hypot_map;
        for (id, v) in new_ids.iter_mut().enumerate().take(self.start_id as usize) {
            *v = id as u32;
        }
        let mut next = self.start_id;
        for i in 0..self.types.len() {
            let id = self.start_id + i as u32;
            new_ids[id as usize] = if self.map[id as usize] == id {
                next += 1;
                next - 1
            } else {
                UNPROCESSED
            };
        }
        let mut old = std::mem::take(&mut self.types);
        let mut kept = Vec::with_capacity((next - self.start_id) as usize);
        // The kept types' records move together into fresh chunks, so
        // that those of the dropped ones (most, in an encode's dedups) go
        // with theirs, and are changed there.
        let mut arena = Arena::new();
        for (i, mut t) in old.drain(..).enumerate() {
            let id = self.start_id + i as u32;
            if self.map[id as usize] != id {
                continue;
            }
            t.move_records_to(&mut arena);
            let mut bad = None;
            t.for_each_ref_mut(|r| {
                let n = self.hypot_map[self.resolve(*r) as usize];
                if is_mapped(n) {
                    *r = n;
                } else if bad.is_none() {
                    bad = Some(*r);
                }
            });
            if let Some(r) = bad {
                return Err(Error::Dedup {
                    id,
                    reason: format!("refers to type [{r}], which has no canonical type"),
                });
            }
            kept.push(t);
        }
        Ok((kept, old))
    }
}
