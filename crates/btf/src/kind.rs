//! [`Kind`], the `BTF_KIND_*` number of a type, and what each kind is.
//!
//! A newtype over the 7-bit number of `info` rather than an enum: BTF from
//! a newer writer has kinds this crate does not know (read through the
//! layout section), and those must stay representable so that validation
//! can report them with their offset instead of failing to read them.

use std::fmt;

/// The kind of a BTF type: the `BTF_KIND_*` number in bits 24-30 of `info`.
///
/// The known kinds are associated constants ([`Kind::STRUCT`]); any other
/// number is a kind from a newer writer ([`Kind::is_known`] is false).
/// It displays as its number, as the kernel's and libbpf's messages print
/// it; [`Kind::name`] is the name bpftool prints.
///
/// ```
/// use btf::Kind;
/// assert!(Kind::CONST.is_modifier());
/// assert!(!Kind::TYPEDEF.is_modifier() && Kind::TYPEDEF.is_modifier_or_typedef());
/// assert_eq!(Kind::from(4), Kind::STRUCT);
/// assert_eq!(Kind::STRUCT.name(), "STRUCT");
/// assert_eq!(Kind::from(40).name(), "UNKNOWN_KIND_40");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Kind(u8);

impl Kind {
    /// Kind 0: not a type; id 0 (`void`) has it.
    pub const UNKN: Kind = Kind(0);
    /// An integer: size, encoding, bit offset and bits.
    pub const INT: Kind = Kind(1);
    /// A pointer to a type.
    pub const PTR: Kind = Kind(2);
    /// An array: element type, index type, element count.
    pub const ARRAY: Kind = Kind(3);
    /// A struct with its members.
    pub const STRUCT: Kind = Kind(4);
    /// A union with its members.
    pub const UNION: Kind = Kind(5);
    /// An enum of 32-bit values.
    pub const ENUM: Kind = Kind(6);
    /// A forward declaration of a struct or (kind_flag) union.
    pub const FWD: Kind = Kind(7);
    /// A typedef.
    pub const TYPEDEF: Kind = Kind(8);
    /// The `volatile` qualifier.
    pub const VOLATILE: Kind = Kind(9);
    /// The `const` qualifier.
    pub const CONST: Kind = Kind(10);
    /// The `restrict` qualifier.
    pub const RESTRICT: Kind = Kind(11);
    /// A function: its name, prototype and linkage.
    pub const FUNC: Kind = Kind(12);
    /// A function prototype: return type and parameters.
    pub const FUNC_PROTO: Kind = Kind(13);
    /// A variable.
    pub const VAR: Kind = Kind(14);
    /// A data section's variables.
    pub const DATASEC: Kind = Kind(15);
    /// A floating-point type.
    pub const FLOAT: Kind = Kind(16);
    /// A tag (`btf_decl_tag`) on a declaration, member or parameter.
    pub const DECL_TAG: Kind = Kind(17);
    /// A tag (`btf_type_tag`) on a type, such as `__user`.
    pub const TYPE_TAG: Kind = Kind(18);
    /// An enum of 64-bit values.
    pub const ENUM64: Kind = Kind(19);
    /// Where one parameter of an inlined function is found (bpf-next).
    pub const LOC_PARAM: Kind = Kind(20);
    /// The locations of an inline site's parameters (bpf-next).
    pub const LOC_PROTO: Kind = Kind(21);
    /// The inline sites of one ELF section (bpf-next).
    pub const LOCSEC: Kind = Kind(22);
    /// The last kind this crate knows.
    pub const MAX_KNOWN: Kind = Kind::LOCSEC;
    /// The last kind the Linux 6.18 verifier knows.
    pub const MAX_6_18: Kind = Kind::ENUM64;
    /// The largest number `info`'s 7 kind bits hold (`BTF_MAX_KIND`).
    pub const MAX: Kind = Kind(0x7f);

    /// The kind numbered `n`; any number is representable.
    pub const fn new(n: u8) -> Kind {
        Kind(n)
    }

    /// The `BTF_KIND_*` number.
    pub const fn as_u8(self) -> u8 {
        self.0
    }

    /// Whether this crate knows this kind's records (it is at most
    /// [`Kind::MAX_KNOWN`]).
    pub const fn is_known(self) -> bool {
        self.0 <= Kind::MAX_KNOWN.0
    }

    /// CONST, VOLATILE or RESTRICT: a C type qualifier, written as its
    /// keyword ([`Kind::qualifier_keyword`]). TYPE_TAG is no qualifier:
    /// it is an annotation (`__user`), written as an attribute if at all.
    pub const fn is_qualifier(self) -> bool {
        self.qualifier_keyword().is_some()
    }

    /// The C keyword of a qualifier: `const`, `volatile` or `restrict`;
    /// `None` for any other kind.
    pub const fn qualifier_keyword(self) -> Option<&'static str> {
        match self {
            Kind::CONST => Some("const"),
            Kind::VOLATILE => Some("volatile"),
            Kind::RESTRICT => Some("restrict"),
            _ => None,
        }
    }

    /// A qualifier or type tag: VOLATILE, CONST, RESTRICT, TYPE_TAG
    /// (libbpf's `btf_is_mod`). TYPEDEF is not one: it names its type.
    pub const fn is_modifier(self) -> bool {
        self.is_qualifier() || matches!(self, Kind::TYPE_TAG)
    }

    /// A modifier or TYPEDEF: a kind that refers through `type` and has no
    /// size of its own (the kernel's `btf_type_is_modifier`); what a walk
    /// to the type a value really has (its size, alignment, members)
    /// goes through.
    pub const fn is_modifier_or_typedef(self) -> bool {
        self.is_modifier() || matches!(self, Kind::TYPEDEF)
    }

    /// PTR or a modifier: what a C declarator wraps around a base type
    /// (`const int *volatile p`). TYPEDEF is not one: a declaration
    /// writes it by name, so a walk along a declarator ends there.
    pub const fn is_ptr_or_modifier(self) -> bool {
        self.is_modifier() || matches!(self, Kind::PTR)
    }

    /// PTR, TYPEDEF or a modifier: a kind that is nothing but the id of
    /// the one type it refers to (its `type` word), with no size and no
    /// records. bpftool prints only that `type_id`; libbpf's dedup hashes
    /// and compares it by that word alone; the verifier checks its
    /// metadata alike. VAR and DECL_TAG refer to one type too but carry
    /// a record more; FUNC's type is its prototype.
    pub const fn is_reference(self) -> bool {
        self.is_modifier_or_typedef() || matches!(self, Kind::PTR)
    }

    /// A kind that can stand in a C declaration: INT, FLOAT, PTR, ARRAY,
    /// STRUCT, UNION, ENUM, ENUM64, FWD, TYPEDEF, FUNC_PROTO and the
    /// modifiers. Not FUNC, VAR, DATASEC, DECL_TAG, the location kinds
    /// or a kind this crate does not know: those describe functions,
    /// variables, sections and inline sites, or annotate a declaration,
    /// and have no place in a C type; the C dumper skips them and a
    /// module's split BTF may not take them from its base.
    pub const fn is_c_type(self) -> bool {
        self.is_reference()
            || matches!(
                self,
                Kind::INT
                    | Kind::FLOAT
                    | Kind::ARRAY
                    | Kind::STRUCT
                    | Kind::UNION
                    | Kind::ENUM
                    | Kind::ENUM64
                    | Kind::FWD
                    | Kind::FUNC_PROTO
            )
    }

    /// STRUCT or UNION: a kind with members.
    pub const fn is_struct_or_union(self) -> bool {
        matches!(self, Kind::STRUCT | Kind::UNION)
    }

    /// STRUCT, UNION or FWD: what a forward declaration can resolve to,
    /// and the FWD itself.
    pub const fn is_struct_or_fwd(self) -> bool {
        self.is_struct_or_union() || self.is_fwd()
    }

    /// FWD: a forward declaration.
    pub const fn is_fwd(self) -> bool {
        matches!(self, Kind::FWD)
    }

    /// ENUM or ENUM64.
    pub const fn is_enum(self) -> bool {
        matches!(self, Kind::ENUM | Kind::ENUM64)
    }

    /// The name bpftool prints for this kind ("STRUCT"); kinds this crate
    /// does not know are `UNKNOWN_KIND_<n>` up to 127, "UNKNOWN" past it.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::INT => "INT",
            Kind::PTR => "PTR",
            Kind::ARRAY => "ARRAY",
            Kind::STRUCT => "STRUCT",
            Kind::UNION => "UNION",
            Kind::ENUM => "ENUM",
            Kind::FWD => "FWD",
            Kind::TYPEDEF => "TYPEDEF",
            Kind::VOLATILE => "VOLATILE",
            Kind::CONST => "CONST",
            Kind::RESTRICT => "RESTRICT",
            Kind::FUNC => "FUNC",
            Kind::FUNC_PROTO => "FUNC_PROTO",
            Kind::VAR => "VAR",
            Kind::DATASEC => "DATASEC",
            Kind::FLOAT => "FLOAT",
            Kind::DECL_TAG => "DECL_TAG",
            Kind::TYPE_TAG => "TYPE_TAG",
            Kind::ENUM64 => "ENUM64",
            Kind::LOC_PARAM => "LOC_PARAM",
            Kind::LOC_PROTO => "LOC_PROTO",
            Kind::LOCSEC => "LOCSEC",
            k if k.as_u8() > Kind::MAX_KNOWN.as_u8() && k.as_u8() <= Kind::MAX.as_u8() => {
                UNKNOWN_KIND_NAMES[(k.as_u8() - Kind::MAX_KNOWN.as_u8() - 1) as usize]
            }
            _ => "UNKNOWN",
        }
    }
}

impl From<u8> for Kind {
    fn from(n: u8) -> Kind {
        Kind(n)
    }
}

impl From<Kind> for u8 {
    fn from(k: Kind) -> u8 {
        k.0
    }
}

impl From<Kind> for usize {
    /// The number as an index, as into the layout section's records.
    fn from(k: Kind) -> usize {
        usize::from(k.0)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// Names for the kinds this crate does not know but a layout section can
/// describe: `UNKNOWN_KIND_23` up to `UNKNOWN_KIND_127`.
const UNKNOWN_KIND_NAMES: [&str; (Kind::MAX.as_u8() - Kind::MAX_KNOWN.as_u8()) as usize] = [
    "UNKNOWN_KIND_23",
    "UNKNOWN_KIND_24",
    "UNKNOWN_KIND_25",
    "UNKNOWN_KIND_26",
    "UNKNOWN_KIND_27",
    "UNKNOWN_KIND_28",
    "UNKNOWN_KIND_29",
    "UNKNOWN_KIND_30",
    "UNKNOWN_KIND_31",
    "UNKNOWN_KIND_32",
    "UNKNOWN_KIND_33",
    "UNKNOWN_KIND_34",
    "UNKNOWN_KIND_35",
    "UNKNOWN_KIND_36",
    "UNKNOWN_KIND_37",
    "UNKNOWN_KIND_38",
    "UNKNOWN_KIND_39",
    "UNKNOWN_KIND_40",
    "UNKNOWN_KIND_41",
    "UNKNOWN_KIND_42",
    "UNKNOWN_KIND_43",
    "UNKNOWN_KIND_44",
    "UNKNOWN_KIND_45",
    "UNKNOWN_KIND_46",
    "UNKNOWN_KIND_47",
    "UNKNOWN_KIND_48",
    "UNKNOWN_KIND_49",
    "UNKNOWN_KIND_50",
    "UNKNOWN_KIND_51",
    "UNKNOWN_KIND_52",
    "UNKNOWN_KIND_53",
    "UNKNOWN_KIND_54",
    "UNKNOWN_KIND_55",
    "UNKNOWN_KIND_56",
    "UNKNOWN_KIND_57",
    "UNKNOWN_KIND_58",
    "UNKNOWN_KIND_59",
    "UNKNOWN_KIND_60",
    "UNKNOWN_KIND_61",
    "UNKNOWN_KIND_62",
    "UNKNOWN_KIND_63",
    "UNKNOWN_KIND_64",
    "UNKNOWN_KIND_65",
    "UNKNOWN_KIND_66",
    "UNKNOWN_KIND_67",
    "UNKNOWN_KIND_68",
    "UNKNOWN_KIND_69",
    "UNKNOWN_KIND_70",
    "UNKNOWN_KIND_71",
    "UNKNOWN_KIND_72",
    "UNKNOWN_KIND_73",
    "UNKNOWN_KIND_74",
    "UNKNOWN_KIND_75",
    "UNKNOWN_KIND_76",
    "UNKNOWN_KIND_77",
    "UNKNOWN_KIND_78",
    "UNKNOWN_KIND_79",
    "UNKNOWN_KIND_80",
    "UNKNOWN_KIND_81",
    "UNKNOWN_KIND_82",
    "UNKNOWN_KIND_83",
    "UNKNOWN_KIND_84",
    "UNKNOWN_KIND_85",
    "UNKNOWN_KIND_86",
    "UNKNOWN_KIND_87",
    "UNKNOWN_KIND_88",
    "UNKNOWN_KIND_89",
    "UNKNOWN_KIND_90",
    "UNKNOWN_KIND_91",
    "UNKNOWN_KIND_92",
    "UNKNOWN_KIND_93",
    "UNKNOWN_KIND_94",
    "UNKNOWN_KIND_95",
    "UNKNOWN_KIND_96",
    "UNKNOWN_KIND_97",
    "UNKNOWN_KIND_98",
    "UNKNOWN_KIND_99",
    "UNKNOWN_KIND_100",
    "UNKNOWN_KIND_101",
    "UNKNOWN_KIND_102",
    "UNKNOWN_KIND_103",
    "UNKNOWN_KIND_104",
    "UNKNOWN_KIND_105",
    "UNKNOWN_KIND_106",
    "UNKNOWN_KIND_107",
    "UNKNOWN_KIND_108",
    "UNKNOWN_KIND_109",
    "UNKNOWN_KIND_110",
    "UNKNOWN_KIND_111",
    "UNKNOWN_KIND_112",
    "UNKNOWN_KIND_113",
    "UNKNOWN_KIND_114",
    "UNKNOWN_KIND_115",
    "UNKNOWN_KIND_116",
    "UNKNOWN_KIND_117",
    "UNKNOWN_KIND_118",
    "UNKNOWN_KIND_119",
    "UNKNOWN_KIND_120",
    "UNKNOWN_KIND_121",
    "UNKNOWN_KIND_122",
    "UNKNOWN_KIND_123",
    "UNKNOWN_KIND_124",
    "UNKNOWN_KIND_125",
    "UNKNOWN_KIND_126",
    "UNKNOWN_KIND_127",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The kinds, known or not, that `group` holds.
    fn kinds_where(group: impl Fn(Kind) -> bool) -> Vec<Kind> {
        (0..=127).map(Kind::new).filter(|&k| group(k)).collect()
    }

    #[test]
    fn predicates_partition_the_known_kinds() {
        assert_eq!(
            kinds_where(Kind::is_modifier),
            [Kind::VOLATILE, Kind::CONST, Kind::RESTRICT, Kind::TYPE_TAG]
        );
        assert_eq!(
            kinds_where(Kind::is_qualifier),
            [Kind::VOLATILE, Kind::CONST, Kind::RESTRICT]
        );
        assert_eq!(Kind::RESTRICT.qualifier_keyword(), Some("restrict"));
        assert_eq!(Kind::TYPE_TAG.qualifier_keyword(), None);
        assert!(Kind::TYPEDEF.is_modifier_or_typedef());
        assert!(!Kind::PTR.is_modifier_or_typedef());
        assert!(Kind::PTR.is_ptr_or_modifier() && !Kind::TYPEDEF.is_ptr_or_modifier());
        assert_eq!(
            kinds_where(Kind::is_reference),
            [
                Kind::PTR,
                Kind::TYPEDEF,
                Kind::VOLATILE,
                Kind::CONST,
                Kind::RESTRICT,
                Kind::TYPE_TAG
            ]
        );
        assert_eq!(
            kinds_where(|k| k <= Kind::MAX_KNOWN && !k.is_c_type()),
            [
                Kind::UNKN,
                Kind::FUNC,
                Kind::VAR,
                Kind::DATASEC,
                Kind::DECL_TAG,
                Kind::LOC_PARAM,
                Kind::LOC_PROTO,
                Kind::LOCSEC
            ]
        );
        assert!(!Kind::from(40).is_c_type());
        assert!(Kind::UNION.is_struct_or_union() && Kind::FWD.is_struct_or_fwd());
        assert!(!Kind::FWD.is_struct_or_union() && !Kind::ENUM.is_struct_or_fwd());
        assert!(Kind::ENUM64.is_enum() && !Kind::INT.is_enum());
    }

    #[test]
    fn unknown_kinds_stay_representable() {
        let k = Kind::from(23);
        assert!(!k.is_known() && Kind::LOCSEC.is_known());
        assert_eq!(u8::from(k), 23);
        assert_eq!(k.to_string(), "23");
        assert_eq!(k.name(), "UNKNOWN_KIND_23");
        assert_eq!(Kind::from(200).name(), "UNKNOWN");
        assert!(k > Kind::MAX_KNOWN);
    }
}
