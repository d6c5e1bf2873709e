//! `btfkit_drgn._native`: a kernel as btfkit's crates read it (memory, the
//! kernel's kallsyms, BTF of vmlinux and modules) exposed to the Python
//! side of the drgn plugin, which turns what it returns into drgn types,
//! objects and symbols.
//!
//! Thin on purpose: opening is `inspect::open`, variables and enumerators
//! are `inspect::Program`'s, the instance of a function is ksyms' BTF link;
//! this crate describes BTF types as tuples (see [`describe`]).

use pyo3::prelude::*;

mod describe;
mod kernel;

pyo3::create_exception!(
    _native,
    BtfkitError,
    pyo3::exceptions::PyException,
    "A kernel, dump or BTF that btfkit cannot use: the message names the file and the offset or address."
);

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<kernel::Kernel>()?;
    m.add("BtfkitError", m.py().get_type::<BtfkitError>())?;
    Ok(())
}
