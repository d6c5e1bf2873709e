pub mod drgn;
pub mod dumps;
