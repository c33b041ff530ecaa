//! Turns parsed specs into Rust source text.

use crate::spec::{DefaultLit, Field, Kind, Prim, Spec, StructDef, Ty, Versions};
use std::fmt::Write as _;

#[path = "emit_view.rs"]
mod view;

const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "static", "struct", "super", "trait", "true", "try", "type", "typeof",
    "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// snake_case of a PascalCase spec name; a Rust keyword gets a trailing underscore (`type_`).
pub fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = if i > 0 { Some(chars[i - 1]) } else { None };
            let next = chars.get(i + 1).copied();
            let boundary = match prev {
                None => false,
                Some(p) if p.is_ascii_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_ascii_uppercase() => next.is_some_and(|n| n.is_ascii_lowercase()),
                _ => false,
            };
            if boundary {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    if KEYWORDS.contains(&out.as_str()) {
        out.push('_');
    }
    out
}

/// Context of one spec while emitting.
struct Ctx<'a> {
    spec: &'a Spec,
}

impl Ctx<'_> {
    fn has_flexible(&self) -> bool {
        !self.spec.flexible.intersect(&self.spec.valid).is_empty()
    }

    /// A boolean Rust expression for `version` lying in `r`, or None when it always does.
    fn cond(&self, r: &Versions) -> Option<String> {
        let valid = self.spec.valid;
        let r = r.intersect(&valid);
        if r.is_empty() {
            return Some("false".to_string());
        }
        let lo = r.lo > valid.lo;
        let hi = r.hi < valid.hi;
        match (lo, hi) {
            (false, false) => None,
            (true, false) => Some(format!("version >= {}", r.lo)),
            (false, true) => Some(format!("version <= {}", r.hi)),
            (true, true) if r.lo == r.hi => Some(format!("version == {}", r.lo)),
            (true, true) => Some(format!("({} ..= {}).contains(&version)", r.lo, r.hi)),
        }
    }

    fn cond_or_true(&self, r: &Versions) -> String {
        self.cond(r).unwrap_or_else(|| "true".to_string())
    }

    fn flex_expr(&self, f: &Field) -> String {
        match &f.flexible_override {
            None => "flexible".to_string(),
            Some(r) => self.cond_or_true(r),
        }
    }
}

fn prim_rust(p: Prim) -> &'static str {
    match p {
        Prim::Bool => "bool",
        Prim::Int8 => "i8",
        Prim::Int16 => "i16",
        Prim::Uint16 => "u16",
        Prim::Int32 => "i32",
        Prim::Uint32 => "u32",
        Prim::Int64 => "i64",
        Prim::Float64 => "f64",
        Prim::String => "StrBytes",
        Prim::Uuid => "Uuid",
        Prim::Bytes => "Bytes",
        Prim::Records => "Bytes",
    }
}

fn prim_fixed_size(p: Prim) -> Option<usize> {
    Some(match p {
        Prim::Bool | Prim::Int8 => 1,
        Prim::Int16 | Prim::Uint16 => 2,
        Prim::Int32 | Prim::Uint32 => 4,
        Prim::Int64 | Prim::Float64 => 8,
        Prim::Uuid => 16,
        _ => return None,
    })
}

fn prim_get(p: Prim) -> &'static str {
    match p {
        Prim::Bool => "get_bool",
        Prim::Int8 => "get_i8",
        Prim::Int16 => "get_i16",
        Prim::Uint16 => "get_u16",
        Prim::Int32 => "get_i32",
        Prim::Uint32 => "get_u32",
        Prim::Int64 => "get_i64",
        Prim::Float64 => "get_f64",
        Prim::Uuid => "get_uuid",
        _ => unreachable!("variable-size primitive"),
    }
}

fn prim_put(p: Prim) -> &'static str {
    match p {
        Prim::Bool => "put_bool",
        Prim::Int8 => "put_i8",
        Prim::Int16 => "put_i16",
        Prim::Uint16 => "put_u16",
        Prim::Int32 => "put_i32",
        Prim::Uint32 => "put_u32",
        Prim::Int64 => "put_i64",
        Prim::Float64 => "put_f64",
        Prim::Uuid => "put_uuid",
        _ => unreachable!("variable-size primitive"),
    }
}

/// How many elements an array of `inner` keeps inline, without allocating: arrays of fixed-size
/// numbers (replica lists, partition indexes) are `SmallVec`s holding up to 16 bytes inline, as
/// small as a `Vec`, because these short lists were most of the allocations of a metadata decode.
fn inline_capacity(inner: &Ty) -> Option<usize> {
    match inner {
        Ty::Prim(Prim::Uuid) => None,
        Ty::Prim(p) => prim_fixed_size(*p).map(|size| 16 / size),
        _ => None,
    }
}

fn base_rust(ty: &Ty) -> String {
    match ty {
        Ty::Prim(p) => prim_rust(*p).to_string(),
        Ty::Struct(s) => s.clone(),
        Ty::Array(inner) => match inline_capacity(inner) {
            Some(n) => format!("SmallVec<[{}; {n}]>", base_rust(inner)),
            None => format!("Vec<{}>", base_rust(inner)),
        },
    }
}

/// Whether the Rust field is an `Option`.
fn is_option(f: &Field) -> bool {
    matches!(f.ty, Ty::Prim(Prim::Records)) || !f.nullable.intersect(&f.versions).is_empty()
}

fn field_rust(f: &Field) -> String {
    if is_option(f) {
        format!("Option<{}>", base_rust(&f.ty))
    } else {
        base_rust(&f.ty)
    }
}

fn parse_int(text: &str) -> Result<i128, String> {
    let t = text.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i128::from_str_radix(h, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        i128::from_str_radix(&t[1..], 8)
    } else {
        t.parse::<i128>()
    }
    .map_err(|e| format!("bad integer default '{text}': {e}"))?;
    Ok(if neg { -v } else { v })
}

/// The Rust expression of a field's default value.
fn default_expr(f: &Field) -> Result<String, String> {
    default_expr_of(f, false)
}

/// The Rust expression of a field's default value in the owned struct or, with `view`, in its
/// borrowed view.
fn default_expr_of(f: &Field, view: bool) -> Result<String, String> {
    let opt = is_option(f);
    let d = f.default.as_ref();
    let is_null = matches!(d, Some(DefaultLit::Null));
    if is_null && !opt {
        return Err(format!("{}: null default on a non-nullable field", f.name));
    }
    if is_null {
        return Ok("None".to_string());
    }
    let text = match d {
        Some(DefaultLit::Text(t)) => Some(t.as_str()),
        _ => None,
    };
    let base = match &f.ty {
        Ty::Prim(Prim::Records) => return Ok("None".to_string()),
        Ty::Prim(Prim::Bool) => match text {
            None | Some("false") => "false".to_string(),
            Some("true") => "true".to_string(),
            Some(t) => return Err(format!("{}: bad bool default {t}", f.name)),
        },
        Ty::Prim(Prim::Float64) => {
            let v: f64 = match text {
                None => 0.0,
                Some(t) => t
                    .parse()
                    .map_err(|e| format!("{}: bad float default {t}: {e}", f.name))?,
            };
            format!("{v:?}")
        }
        Ty::Prim(
            p
            @ (Prim::Int8 | Prim::Int16 | Prim::Uint16 | Prim::Int32 | Prim::Uint32 | Prim::Int64),
        ) => {
            let v = match text {
                None => 0,
                Some(t) => parse_int(t)?,
            };
            let (lo, hi): (i128, i128) = match p {
                Prim::Int8 => (i8::MIN.into(), i8::MAX.into()),
                Prim::Int16 => (i16::MIN.into(), i16::MAX.into()),
                Prim::Uint16 => (0, u16::MAX.into()),
                Prim::Int32 => (i32::MIN.into(), i32::MAX.into()),
                Prim::Uint32 => (0, u32::MAX.into()),
                _ => (i64::MIN.into(), i64::MAX.into()),
            };
            if v < lo || v > hi {
                return Err(format!("{}: default {v} out of range", f.name));
            }
            format!("{v}")
        }
        Ty::Prim(Prim::String) => match (text, view) {
            (None, false) => "StrBytes::new()".to_string(),
            (Some(t), false) => format!("StrBytes::from_static_str({t:?})"),
            (None, true) => "\"\"".to_string(),
            (Some(t), true) => format!("{t:?}"),
        },
        Ty::Prim(Prim::Uuid) => {
            if text.is_some() {
                return Err(format!(
                    "{}: custom uuid defaults are not supported",
                    f.name
                ));
            }
            "Uuid::ZERO".to_string()
        }
        Ty::Prim(Prim::Bytes) if view => "&[]".to_string(),
        Ty::Prim(Prim::Bytes) => "Bytes::new()".to_string(),
        Ty::Struct(_) => "Default::default()".to_string(),
        Ty::Array(_) if view => "ArrayView::empty()".to_string(),
        Ty::Array(inner) if inline_capacity(inner).is_some() => "SmallVec::new()".to_string(),
        Ty::Array(_) => "Vec::new()".to_string(),
    };
    Ok(if opt { format!("Some({base})") } else { base })
}

/// A boolean expression: field `f` of `self` holds something other than its default.
fn non_default(f: &Field) -> Result<String, String> {
    let p = format!("self.{}", snake_case(&f.name));
    Ok(match (&f.ty, is_option(f)) {
        (Ty::Array(_), false) => format!("!{p}.is_empty()"),
        (Ty::Array(_), true) => {
            if default_expr(f)? == "None" {
                format!("{p}.is_some()")
            } else {
                format!("{p}.as_ref().map_or(true, |v| !v.is_empty())")
            }
        }
        _ => format!("{p} != {}", default_expr(f)?),
    })
}

/// Result-valued expression reading a non-null value of `ty` from `buf`.
fn read_plain(ty: &Ty, flex: &str) -> String {
    match ty {
        Ty::Prim(Prim::String) => format!("wire::get_string(buf, {flex})"),
        Ty::Prim(Prim::Bytes | Prim::Records) => format!("wire::get_bytes(buf, {flex})"),
        Ty::Prim(p) => format!("wire::{}(buf)", prim_get(*p)),
        Ty::Struct(s) => format!("{s}::decode(buf, version)"),
        Ty::Array(inner) => format!(
            "wire::{}(buf, {flex}, |buf| {})",
            if inline_capacity(inner).is_some() {
                "get_small_array"
            } else {
                "get_array"
            },
            read_plain(inner, flex)
        ),
    }
}

/// Result-valued expression reading a possibly null value of `ty` from `buf`.
fn read_nullable(ty: &Ty, flex: &str) -> Result<String, String> {
    Ok(match ty {
        Ty::Prim(Prim::String) => format!("wire::get_nullable_string(buf, {flex})"),
        Ty::Prim(Prim::Bytes | Prim::Records) => format!("wire::get_nullable_bytes(buf, {flex})"),
        Ty::Struct(s) => format!("wire::get_nullable_struct(buf, |buf| {s}::decode(buf, version))"),
        Ty::Array(inner) => {
            format!(
                "wire::{}(buf, {flex}, |buf| {})",
                if inline_capacity(inner).is_some() {
                    "get_nullable_small_array"
                } else {
                    "get_nullable_array"
                },
                read_plain(inner, flex)
            )
        }
        Ty::Prim(p) => return Err(format!("nullable {} is not supported", p.spec_name())),
    })
}

/// Result-valued expression reading field `f` in a version where it is present.
fn read_field(ctx: &Ctx<'_>, f: &Field, flex: &str) -> Result<String, String> {
    read_field_with(ctx, f, flex, read_plain, read_nullable)
}

/// `read_field` with the readers of a non-null and of a possibly null value given: the owned
/// decoder's or the view decoder's, which differ in their readers only.
fn read_field_with(
    ctx: &Ctx<'_>,
    f: &Field,
    flex: &str,
    plain: fn(&Ty, &str) -> String,
    nullable_read: fn(&Ty, &str) -> Result<String, String>,
) -> Result<String, String> {
    if !is_option(f) {
        return Ok(plain(&f.ty, flex));
    }
    let nullable = f.nullable.intersect(&f.versions);
    if nullable.is_empty() {
        return Ok(format!("{}.map(Some)", plain(&f.ty, flex)));
    }
    let versions = f.versions.intersect(&ctx.spec.valid);
    if nullable.contains_range(&versions) {
        return nullable_read(&f.ty, flex);
    }
    Ok(format!(
        "if {} {{ {} }} else {{ {}.map(Some) }}",
        ctx.cond_or_true(&nullable),
        nullable_read(&f.ty, flex)?,
        plain(&f.ty, flex)
    ))
}

/// Statements writing the non-null place `p` of type `ty`.
fn write_plain(ty: &Ty, p: &str, flex: &str) -> String {
    match ty {
        Ty::Prim(Prim::String) => format!("wire::put_string(buf, &{p}, {flex})?;"),
        Ty::Prim(Prim::Bytes) => format!("wire::put_bytes(buf, &{p}, {flex})?;"),
        Ty::Prim(Prim::Records) => format!("wire::put_records(buf, &{p}, {flex})?;"),
        Ty::Prim(Prim::Uuid) => format!("wire::put_uuid(buf, &{p});"),
        Ty::Prim(pr) => format!("wire::{}(buf, {p});", prim_put(*pr)),
        Ty::Struct(_) => format!("{p}.encode(buf, version)?;"),
        // One slice borrow per array: `SmallVec` checks whether it spilled on every `len`/`iter`.
        Ty::Array(inner) => format!(
            "{{ let a: &[_] = &{p}; wire::put_array_len(buf, a.len(), {flex})?; for e in a.iter() {{ {} }} }}",
            write_plain(inner, "(*e)", flex)
        ),
    }
}

fn write_nullable(ty: &Ty, p: &str, flex: &str) -> String {
    match ty {
        Ty::Prim(Prim::String) => format!("wire::put_nullable_string(buf, {p}.as_deref(), {flex})?;"),
        Ty::Prim(Prim::Bytes) => {
            format!("wire::put_nullable_bytes(buf, {p}.as_deref(), {flex})?;")
        }
        Ty::Prim(Prim::Records) => {
            format!("wire::put_nullable_records(buf, {p}.as_ref(), {flex})?;")
        }
        Ty::Struct(_) => format!(
            "match &{p} {{ None => wire::put_i8(buf, -1), Some(v) => {{ wire::put_i8(buf, 1); v.encode(buf, version)?; }} }}"
        ),
        Ty::Array(_) => format!(
            "match &{p} {{ None => wire::put_null_array(buf, {flex}), Some(v) => {{ {} }} }}",
            write_plain(ty, "(*v)", flex)
        ),
        Ty::Prim(_) => unreachable!("checked by read_nullable"),
    }
}

fn write_field(ctx: &Ctx<'_>, st: &StructDef, f: &Field, flex: &str) -> String {
    let p = format!("self.{}", snake_case(&f.name));
    if !is_option(f) {
        return write_plain(&f.ty, &p, flex);
    }
    let not_null = format!(
        "match &{p} {{ Some(v) => {{ {} }} None => return Err(EncodeError::NullValue {{ field: \"{}.{}\", version }}), }}",
        write_plain(&f.ty, "(*v)", flex),
        st.name,
        f.name
    );
    let nullable = f.nullable.intersect(&f.versions);
    if nullable.is_empty() {
        return not_null;
    }
    let versions = f.versions.intersect(&ctx.spec.valid);
    if nullable.contains_range(&versions) {
        return write_nullable(&f.ty, &p, flex);
    }
    format!(
        "if {} {{ {} }} else {{ {} }}",
        ctx.cond_or_true(&nullable),
        write_nullable(&f.ty, &p, flex),
        not_null
    )
}

/// usize expression: encoded size of the non-null place `p`.
fn size_plain(ty: &Ty, p: &str, flex: &str) -> String {
    match ty {
        Ty::Prim(Prim::String) => format!("wire::string_size(&{p}, {flex})"),
        Ty::Prim(Prim::Bytes | Prim::Records) => format!("wire::bytes_size(&{p}, {flex})"),
        Ty::Prim(pr) => format!("{}", prim_fixed_size(*pr).unwrap_or(0)),
        Ty::Struct(_) => format!("{p}.encoded_len(version)?"),
        Ty::Array(inner) => {
            let head = format!("wire::array_len_size({p}.len(), {flex})");
            match inner.as_ref() {
                Ty::Prim(pr) if prim_fixed_size(*pr).is_some() => {
                    format!(
                        "{{ let n = {p}.len(); wire::array_len_size(n, {flex}) + n * {} }}",
                        prim_fixed_size(*pr).unwrap_or(0)
                    )
                }
                _ => format!(
                    "{head} + {{ let mut n = 0usize; for e in {p}.iter() {{ n += {}; }} n }}",
                    size_plain(inner, "(*e)", flex)
                ),
            }
        }
    }
}

fn size_nullable(ty: &Ty, p: &str, flex: &str) -> String {
    match ty {
        Ty::Prim(Prim::String) => format!("wire::nullable_string_size({p}.as_deref(), {flex})"),
        Ty::Prim(Prim::Bytes | Prim::Records) => {
            format!("wire::nullable_bytes_size({p}.as_deref(), {flex})")
        }
        Ty::Struct(_) => {
            format!("match &{p} {{ None => 1, Some(v) => 1 + v.encoded_len(version)? }}")
        }
        Ty::Array(_) => format!(
            "match &{p} {{ None => wire::null_array_size({flex}), Some(v) => {} }}",
            size_plain(ty, "(*v)", flex)
        ),
        Ty::Prim(_) => "0".to_string(),
    }
}

fn size_field(ctx: &Ctx<'_>, f: &Field, flex: &str) -> String {
    let p = format!("self.{}", snake_case(&f.name));
    if !is_option(f) {
        return size_plain(&f.ty, &p, flex);
    }
    let not_null = format!(
        "match &{p} {{ Some(v) => {}, None => 0 }}",
        size_plain(&f.ty, "(*v)", flex)
    );
    let nullable = f.nullable.intersect(&f.versions);
    if nullable.is_empty() {
        return not_null;
    }
    let versions = f.versions.intersect(&ctx.spec.valid);
    if nullable.contains_range(&versions) {
        return size_nullable(&f.ty, &p, flex);
    }
    format!(
        "if {} {{ {} }} else {{ {} }}",
        ctx.cond_or_true(&nullable),
        size_nullable(&f.ty, &p, flex),
        not_null
    )
}

/// Versions in which the field is written inline (not in the tagged section).
fn inline_versions(f: &Field) -> Versions {
    match &f.tagged {
        None => f.versions,
        Some((_, t)) => {
            if t.is_empty() {
                f.versions
            } else {
                f.versions.intersect(&Versions {
                    lo: 0,
                    hi: t.lo - 1,
                })
            }
        }
    }
}

fn tagged_versions(f: &Field) -> Option<(u32, Versions)> {
    f.tagged.map(|(tag, t)| (tag, t.intersect(&f.versions)))
}

fn doc_field(ctx: &Ctx<'_>, f: &Field) -> String {
    let mut s = format!(
        "`{}`: `{}`, versions {}",
        f.name,
        f.ty.spec_name(),
        f.versions.describe()
    );
    let n = f.nullable.intersect(&f.versions);
    if !n.is_empty() {
        let _ = write!(s, ", nullable in {}", n.describe());
    }
    if let Some((tag, t)) = &f.tagged {
        let _ = write!(s, ", tagged field {tag} in {}", t.describe());
    }
    if let Some(d) = &f.default {
        match d {
            DefaultLit::Null => s.push_str(", default null"),
            DefaultLit::Text(t) => {
                let _ = write!(s, ", default `{t}`");
            }
        }
    }
    if f.ignorable {
        s.push_str(", ignorable");
    }
    if f.map_key {
        s.push_str(", map key");
    }
    if f.flexible_override.is_some() {
        s.push_str(", never compact");
    }
    let _ = ctx;
    s.push('.');
    s
}

/// Whether `f` gets a `<name>_file` sibling: a `records` field of a response, which a broker may
/// fill from a segment file slice (sent with `sendfile`) instead of bytes.
fn has_file_sibling(ctx: &Ctx<'_>, f: &Field) -> bool {
    ctx.spec.kind == Kind::Response && matches!(f.ty, Ty::Prim(Prim::Records)) && f.tagged.is_none()
}

fn emit_struct(ctx: &Ctx<'_>, st: &StructDef, top: bool, out: &mut String) -> Result<(), String> {
    let spec = ctx.spec;
    let flexible = ctx.has_flexible();
    // Struct definition.
    if top {
        let kind = match spec.kind {
            Kind::Request => "request",
            Kind::Response => "response",
            Kind::Header => "header",
            Kind::Data => "data",
            Kind::Metadata => "metadata record",
        };
        let _ = writeln!(
            out,
            "/// The `{}` {kind} (versions {}, flexible {}).",
            spec.name,
            spec.valid.describe(),
            spec.flexible.describe()
        );
        if let Some(k) = spec.api_key {
            let _ = writeln!(out, "///\n/// Api key {k}.");
        }
    } else {
        let _ = writeln!(out, "/// The `{}` struct of `{}`.", st.name, spec.name);
    }
    let _ = writeln!(
        out,
        "#[derive(Debug, Clone, PartialEq)]\npub struct {} {{",
        st.name
    );
    for f in &st.fields {
        let _ = writeln!(out, "    /// {}", doc_field(ctx, f));
        let _ = writeln!(out, "    pub {}: {},", snake_case(&f.name), field_rust(f));
        if has_file_sibling(ctx, f) {
            let _ = writeln!(
                out,
                "    /// `{}` as a slice of a file (encoded in its place when set; never decoded).",
                f.name
            );
            let _ = writeln!(
                out,
                "    pub {}_file: Option<crate::RecordsFile>,",
                snake_case(&f.name)
            );
        }
    }
    if flexible {
        let _ = writeln!(
            out,
            "    /// Tagged fields not known to this code, by tag, re-encoded unchanged."
        );
        let _ = writeln!(out, "    pub unknown_tagged_fields: UnknownTaggedFields,");
    }
    let _ = writeln!(out, "}}\n");

    // Default.
    let _ = writeln!(
        out,
        "impl Default for {} {{\n    fn default() -> Self {{\n        Self {{",
        st.name
    );
    for f in &st.fields {
        let _ = writeln!(
            out,
            "            {}: {},",
            snake_case(&f.name),
            default_expr(f)?
        );
        if has_file_sibling(ctx, f) {
            let _ = writeln!(out, "            {}_file: None,", snake_case(&f.name));
        }
    }
    if flexible {
        let _ = writeln!(
            out,
            "            unknown_tagged_fields: UnknownTaggedFields::new(),"
        );
    }
    let _ = writeln!(out, "        }}\n    }}\n}}\n");

    let flex_cond = if flexible {
        ctx.cond_or_true(&spec.flexible)
    } else {
        "false".to_string()
    };

    // Decode.
    let _ = writeln!(out, "impl Decode for {} {{", st.name);
    if !top {
        // Inlined into the array loop that reads them, a nested struct is built in place rather
        // than returned through a `Result` and moved into the `Vec`.
        let _ = writeln!(out, "    #[inline]");
    }
    let _ = writeln!(
        out,
        "    fn decode(buf: &mut Bytes, version: i16) -> Result<Self, DecodeError> {{"
    );
    if top {
        let _ = writeln!(
            out,
            "        if !({} ..= {}).contains(&version) {{ return Err(DecodeError::UnsupportedVersion {{ message: \"{}\", version }}); }}",
            spec.valid.lo, spec.valid.hi, spec.name
        );
    }
    let _ = writeln!(out, "        let flexible = {flex_cond};");
    for f in &st.fields {
        // Locals get a prefix so that a field named like a parameter (`Version`) cannot shadow it.
        let name = format!("f_{}", snake_case(&f.name));
        let inline = inline_versions(f);
        let mutability = if f.tagged.is_some() { "mut " } else { "" };
        let read = read_field(ctx, f, &ctx.flex_expr(f))?;
        match ctx.cond(&inline) {
            None => {
                let _ = writeln!(out, "        let {mutability}{name} = {read}?;");
            }
            Some(c) if c == "false" => {
                let _ = writeln!(
                    out,
                    "        let {mutability}{name} = {};",
                    default_expr(f)?
                );
            }
            Some(c) => {
                let _ = writeln!(
                    out,
                    "        let {mutability}{name} = if {c} {{ {read}? }} else {{ {} }};",
                    default_expr(f)?
                );
            }
        }
    }
    if flexible {
        let _ = writeln!(
            out,
            "        let mut unknown_tagged_fields = UnknownTaggedFields::new();"
        );
        let _ = writeln!(out, "        if flexible {{");
        let _ = writeln!(out, "            let count = wire::get_uvarint(buf)?;");
        let _ = writeln!(out, "            let mut last_tag = None;");
        let _ = writeln!(out, "            for _ in 0..count {{");
        let _ = writeln!(
            out,
            "                let (tag, mut data) = wire::get_tagged_field(buf, &mut last_tag)?;"
        );
        let _ = writeln!(out, "                match tag {{");
        let mut tagged: Vec<&Field> = st.fields.iter().filter(|f| f.tagged.is_some()).collect();
        tagged.sort_by_key(|f| f.tagged.map(|t| t.0));
        for f in &tagged {
            let (tag, tv) = tagged_versions(f).ok_or("tagged")?;
            let read = read_field(ctx, f, "true")?;
            let guard = match ctx.cond(&tv) {
                None => String::new(),
                Some(c) => format!(" if {c}"),
            };
            let _ = writeln!(
                out,
                "                    {tag}{guard} => {{ let buf = &mut data; f_{} = {read}?; wire::expect_consumed(buf, \"{}.{}\")?; }}",
                snake_case(&f.name),
                st.name,
                f.name
            );
        }
        let _ = writeln!(
            out,
            "                    _ => {{ unknown_tagged_fields.insert(tag, data); }}"
        );
        let _ = writeln!(out, "                }}\n            }}\n        }}");
    }
    let _ = writeln!(out, "        Ok(Self {{");
    for f in &st.fields {
        let _ = writeln!(
            out,
            "            {}: f_{},",
            snake_case(&f.name),
            snake_case(&f.name)
        );
        if has_file_sibling(ctx, f) {
            let _ = writeln!(out, "            {}_file: None,", snake_case(&f.name));
        }
    }
    if flexible {
        let _ = writeln!(out, "            unknown_tagged_fields,");
    }
    let _ = writeln!(out, "        }})\n    }}\n}}\n");

    // Encode.
    let _ = writeln!(out, "impl Encode for {} {{", st.name);
    let _ = writeln!(
        out,
        "    fn encode<B: EncodeBuf>(&self, buf: &mut B, version: i16) -> Result<(), EncodeError> {{"
    );
    if top {
        let _ = writeln!(
            out,
            "        if !({} ..= {}).contains(&version) {{ return Err(EncodeError::UnsupportedVersion {{ message: \"{}\", version }}); }}",
            spec.valid.lo, spec.valid.hi, spec.name
        );
    }
    let _ = writeln!(out, "        let flexible = {flex_cond};");
    for f in &st.fields {
        let mut write = write_field(ctx, st, f, &ctx.flex_expr(f));
        if has_file_sibling(ctx, f) {
            write = format!(
                "if let Some(file) = &self.{}_file {{ wire::put_records_file(buf, file, {})?; }} else {{ {write} }}",
                snake_case(&f.name),
                ctx.flex_expr(f)
            );
        }
        let inline = inline_versions(f);
        match ctx.cond(&inline) {
            None => {
                let _ = writeln!(out, "        {write}");
            }
            Some(c) if c == "false" => {}
            Some(c) => {
                let _ = writeln!(out, "        if {c} {{ {write} }}");
            }
        }
        if !f.ignorable {
            if let Some(c) = ctx.cond(&f.versions) {
                let _ = writeln!(
                    out,
                    "        if !({c}) && {} {{ return Err(EncodeError::FieldNotInVersion {{ field: \"{}.{}\", version }}); }}",
                    non_default(f)?,
                    st.name,
                    f.name
                );
            }
        }
    }
    if flexible {
        let mut tagged: Vec<&Field> = st.fields.iter().filter(|f| f.tagged.is_some()).collect();
        tagged.sort_by_key(|f| f.tagged.map(|t| t.0));
        let _ = writeln!(out, "        if flexible {{");
        let _ = writeln!(
            out,
            "            let mut count = self.unknown_tagged_fields.len();"
        );
        for f in &tagged {
            let (_, tv) = tagged_versions(f).ok_or("tagged")?;
            let _ = writeln!(
                out,
                "            if {} && {} {{ count += 1; }}",
                ctx.cond_or_true(&tv),
                non_default(f)?
            );
        }
        let _ = writeln!(out, "            wire::put_uvarint_len(buf, count)?;");
        if tagged.is_empty() {
            let _ = writeln!(out, "            if !self.unknown_tagged_fields.is_empty() {{ wire::put_remaining_unknown_tagged_fields(buf, &mut self.unknown_tagged_fields.iter().peekable())?; }}");
        } else {
            let _ = writeln!(
                out,
                "            let mut unknown = self.unknown_tagged_fields.iter().peekable();"
            );
            for f in &tagged {
                let (tag, tv) = tagged_versions(f).ok_or("tagged")?;
                let _ = writeln!(
                    out,
                    "            if {} && {} {{ wire::put_unknown_tagged_fields_before(buf, &mut unknown, {tag})?; wire::put_uvarint(buf, {tag}); let size = {}; wire::put_uvarint_len(buf, size)?; {} }}",
                    ctx.cond_or_true(&tv),
                    non_default(f)?,
                    size_field(ctx, f, "true"),
                    write_field(ctx, st, f, "true"),
                );
            }
            let _ = writeln!(
                out,
                "            wire::put_remaining_unknown_tagged_fields(buf, &mut unknown)?;"
            );
        }
        let _ = writeln!(out, "        }}");
    }
    let _ = writeln!(out, "        Ok(())\n    }}\n");

    if !top {
        // Nested structs' sizes are a few additions, summed once per array element; without the
        // hint they stay calls across the crate boundary.
        let _ = writeln!(out, "    #[inline]");
    }
    let _ = writeln!(
        out,
        "    fn encoded_len(&self, version: i16) -> Result<usize, EncodeError> {{"
    );
    if top {
        let _ = writeln!(
            out,
            "        if !({} ..= {}).contains(&version) {{ return Err(EncodeError::UnsupportedVersion {{ message: \"{}\", version }}); }}",
            spec.valid.lo, spec.valid.hi, spec.name
        );
    }
    let _ = writeln!(out, "        let flexible = {flex_cond};");
    let _ = writeln!(out, "        let mut len = 0usize;");
    for f in &st.fields {
        let mut size = size_field(ctx, f, &ctx.flex_expr(f));
        if has_file_sibling(ctx, f) {
            size = format!(
                "match &self.{}_file {{ Some(file) => wire::records_file_size(file, {}), None => {size} }}",
                snake_case(&f.name),
                ctx.flex_expr(f)
            );
        }
        let inline = inline_versions(f);
        match ctx.cond(&inline) {
            None => {
                let _ = writeln!(out, "        len += {size};");
            }
            Some(c) if c == "false" => {}
            Some(c) => {
                let _ = writeln!(out, "        if {c} {{ len += {size}; }}");
            }
        }
    }
    if flexible {
        let mut tagged: Vec<&Field> = st.fields.iter().filter(|f| f.tagged.is_some()).collect();
        tagged.sort_by_key(|f| f.tagged.map(|t| t.0));
        let _ = writeln!(out, "        if flexible {{");
        let _ = writeln!(
            out,
            "            let mut count = self.unknown_tagged_fields.len();"
        );
        for f in &tagged {
            let (tag, tv) = tagged_versions(f).ok_or("tagged")?;
            let _ = writeln!(
                out,
                "            if {} && {} {{ count += 1; let size = {}; len += wire::uvarint_size({tag}) + wire::usize_uvarint_size(size) + size; }}",
                ctx.cond_or_true(&tv),
                non_default(f)?,
                size_field(ctx, f, "true"),
            );
        }
        let _ = writeln!(out, "            len += wire::usize_uvarint_size(count) + wire::unknown_tagged_fields_size(&self.unknown_tagged_fields);");
        let _ = writeln!(out, "        }}");
    }
    let _ = writeln!(out, "        Ok(len)\n    }}\n}}\n");
    Ok(())
}

fn versions_const(v: &Versions) -> String {
    format!("VersionRange {{ min: {}, max: {} }}", v.lo, v.hi)
}

/// The module name of a spec: `ProduceRequest` → `produce_request`.
pub fn module_name(spec_name: &str) -> String {
    let s = snake_case(spec_name);
    s.trim_end_matches('_').to_string()
}

/// Emits the module of one spec.
pub fn emit_module(spec: &Spec) -> Result<String, String> {
    let ctx = Ctx { spec };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "//! `{}`: generated by josef-protocol-codegen from Kafka's message spec. Do not edit.\n",
        spec.name
    );
    let _ = writeln!(
        out,
        "#![allow(unused_mut, unused_variables, unused_imports, unused_parens, clippy::all)]\n"
    );
    let _ = writeln!(out, "use crate::wire;");
    let _ = writeln!(
        out,
        "use crate::{{Decode, DecodeError, Encode, EncodeBuf, EncodeError, Message, SmallVec, StrBytes, UnknownTaggedFields, Uuid, VersionRange}};"
    );
    let _ = writeln!(
        out,
        "use crate::view::{{read, ArrayView, DecodeView, MessageView, TaggedFieldsView, ViewElement}};"
    );
    let _ = writeln!(out, "use bytes::Bytes;\n");
    for (i, st) in spec.structs.iter().enumerate() {
        emit_struct(&ctx, st, i == 0, &mut out)
            .map_err(|e| format!("{}.{}: {e}", spec.name, st.name))?;
        view::emit_view(&ctx, st, i == 0, &mut out)
            .map_err(|e| format!("{}.{}View: {e}", spec.name, st.name))?;
    }
    let flex = spec.flexible.intersect(&spec.valid);
    let _ = writeln!(out, "impl Message for {} {{", spec.name);
    let _ = writeln!(out, "    type View<'a> = {}View<'a>;", spec.name);
    let _ = writeln!(
        out,
        "    const VALID_VERSIONS: VersionRange = {};",
        versions_const(&spec.valid)
    );
    let _ = writeln!(
        out,
        "    const FLEXIBLE_VERSIONS: Option<i16> = {};",
        if flex.is_empty() {
            "None".to_string()
        } else {
            format!("Some({})", spec.flexible.lo)
        }
    );
    let _ = writeln!(
        out,
        "    const DEPRECATED_VERSIONS: Option<VersionRange> = {};",
        match &spec.deprecated {
            Some(d) if !d.is_empty() => format!("Some({})", versions_const(d)),
            _ => "None".to_string(),
        }
    );
    let _ = writeln!(out, "}}\n");
    let api_name = spec
        .name
        .trim_end_matches("Request")
        .trim_end_matches("Response");
    match spec.kind {
        Kind::Request => {
            let _ = writeln!(
                out,
                "impl crate::Request for {} {{\n    const API_KEY: crate::ApiKey = crate::ApiKey::{api_name};\n    type Response = crate::messages::{api_name}Response;\n}}",
                spec.name
            );
        }
        Kind::Response => {
            let _ = writeln!(
                out,
                "impl crate::Response for {} {{\n    const API_KEY: crate::ApiKey = crate::ApiKey::{api_name};\n    type Request = crate::messages::{api_name}Request;\n}}",
                spec.name
            );
        }
        Kind::Metadata => {
            if let Some(k) = spec.api_key {
                let _ = writeln!(
                    out,
                    "impl {} {{\n    /// The record type of this record in a metadata log frame (the spec's api key).\n    pub const API_KEY: i16 = {k};\n}}",
                    spec.name
                );
            }
        }
        _ => {}
    }
    Ok(out)
}

/// Emits `mod.rs` of a directory of message modules.
pub fn emit_mod(doc: &str, specs: &[&Spec]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "//! {doc}\n//!\n//! Generated by josef-protocol-codegen. Do not edit.\n"
    );
    for s in specs {
        let m = module_name(&s.name);
        let _ = writeln!(out, "pub mod {m};");
    }
    out.push('\n');
    for s in specs {
        let m = module_name(&s.name);
        let _ = writeln!(out, "pub use {m}::{{{n}, {n}View}};", n = s.name);
    }
    out
}

/// One API: its request and response specs.
pub struct Api<'a> {
    /// `Produce`.
    pub name: String,
    /// Request spec.
    pub request: &'a Spec,
    /// Response spec.
    pub response: &'a Spec,
}

/// Emits the `ApiKey` enum.
pub fn emit_api_key(apis: &[Api<'_>]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "//! The `ApiKey` enum. Generated by josef-protocol-codegen. Do not edit.\n"
    );
    let _ = writeln!(out, "/// Every Kafka API, with its numeric api key as discriminant (`ApiKey::Produce as i16 == 0`).");
    let _ = writeln!(out, "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]\n#[repr(i16)]\npub enum ApiKey {{");
    for a in apis {
        let _ = writeln!(
            out,
            "    /// `{}` (api key {}).",
            a.name,
            a.request.api_key.unwrap_or(-1)
        );
        let _ = writeln!(out, "    {} = {},", a.name, a.request.api_key.unwrap_or(-1));
    }
    let _ = writeln!(out, "}}\n");
    let _ = writeln!(out, "impl ApiKey {{");
    let _ = writeln!(out, "    /// Every API key, in api key order.");
    let _ = writeln!(out, "    pub const ALL: [ApiKey; {}] = [", apis.len());
    for a in apis {
        let _ = writeln!(out, "        ApiKey::{},", a.name);
    }
    let _ = writeln!(out, "    ];\n");
    let _ = writeln!(
        out,
        "    /// The API with this numeric key, if there is one."
    );
    let _ = writeln!(
        out,
        "    pub const fn from_i16(key: i16) -> Option<ApiKey> {{\n        match key {{"
    );
    for a in apis {
        let _ = writeln!(
            out,
            "            {} => Some(ApiKey::{}),",
            a.request.api_key.unwrap_or(-1),
            a.name
        );
    }
    let _ = writeln!(out, "            _ => None,\n        }}\n    }}\n");
    let _ = writeln!(
        out,
        "    /// The API's name as Kafka spells it, e.g. `\"Produce\"`."
    );
    let _ = writeln!(
        out,
        "    pub const fn name(self) -> &'static str {{\n        match self {{"
    );
    for a in apis {
        let _ = writeln!(out, "            ApiKey::{} => \"{}\",", a.name, a.name);
    }
    let _ = writeln!(out, "        }}\n    }}\n");
    let _ = writeln!(
        out,
        "    /// The (min, max) versions of this API that the generated code supports."
    );
    let _ = writeln!(
        out,
        "    pub const fn valid_versions(self) -> (i16, i16) {{\n        match self {{"
    );
    for a in apis {
        let _ = writeln!(
            out,
            "            ApiKey::{} => ({}, {}),",
            a.name, a.request.valid.lo, a.request.valid.hi
        );
    }
    let _ = writeln!(out, "        }}\n    }}\n");
    let _ = writeln!(
        out,
        "    /// The first flexible version of this API (open-ended), if any."
    );
    let _ = writeln!(
        out,
        "    pub const fn first_flexible_version(self) -> Option<i16> {{\n        match self {{"
    );
    for a in apis {
        let f = a.request.flexible;
        let v = if f.is_empty() {
            "None".to_string()
        } else {
            format!("Some({})", f.lo)
        };
        let _ = writeln!(out, "            ApiKey::{} => {v},", a.name);
    }
    let _ = writeln!(out, "        }}\n    }}\n");
    let _ = writeln!(
        out,
        "    /// The versions of this API that Kafka marks deprecated, if any."
    );
    let _ = writeln!(out, "    pub const fn deprecated_versions(self) -> Option<(i16, i16)> {{\n        match self {{");
    for a in apis {
        let v = match &a.request.deprecated {
            Some(d) if !d.is_empty() => format!("Some(({}, {}))", d.lo, d.hi),
            _ => "None".to_string(),
        };
        let _ = writeln!(out, "            ApiKey::{} => {v},", a.name);
    }
    let _ = writeln!(out, "        }}\n    }}\n}}");
    out
}

/// Emits the `RequestBody` and `ResponseBody` enums.
pub fn emit_bodies(apis: &[Api<'_>]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "//! `RequestBody` and `ResponseBody`. Generated by josef-protocol-codegen. Do not edit.\n"
    );
    let _ = writeln!(out, "use crate::messages::*;\nuse crate::{{ApiKey, Decode, DecodeError, DecodeView, Encode, EncodeBuf, EncodeError, MessageView}};\nuse bytes::Bytes;\n");
    for (enum_name, suffix, what) in [
        ("RequestBody", "Request", "request"),
        ("ResponseBody", "Response", "response"),
    ] {
        let _ = writeln!(out, "/// The body of any {what}, one variant per API.");
        let _ = writeln!(
            out,
            "#[derive(Debug, Clone, PartialEq)]\npub enum {enum_name} {{"
        );
        for a in apis {
            let _ = writeln!(out, "    /// A `{}{suffix}`.", a.name);
            let _ = writeln!(out, "    {}({}{suffix}),", a.name, a.name);
        }
        let _ = writeln!(out, "}}\n");
        let _ = writeln!(out, "impl {enum_name} {{");
        let _ = writeln!(
            out,
            "    /// Decodes the body of `api_key` at `version` from `buf`."
        );
        let _ = writeln!(out, "    pub fn decode(api_key: ApiKey, version: i16, buf: &mut Bytes) -> Result<Self, DecodeError> {{\n        Ok(match api_key {{");
        for a in apis {
            let _ = writeln!(
                out,
                "            ApiKey::{} => {enum_name}::{}({}{suffix}::decode(buf, version)?),",
                a.name, a.name, a.name
            );
        }
        let _ = writeln!(out, "        }})\n    }}\n");
        let _ = writeln!(out, "    /// Encodes the body at `version` into `buf`.");
        let _ = writeln!(out, "    pub fn encode<B: EncodeBuf>(&self, buf: &mut B, version: i16) -> Result<(), EncodeError> {{\n        match self {{");
        for a in apis {
            let _ = writeln!(
                out,
                "            {enum_name}::{}(m) => m.encode(buf, version),",
                a.name
            );
        }
        let _ = writeln!(out, "        }}\n    }}\n");
        let _ = writeln!(
            out,
            "    /// The number of bytes `encode` writes at `version`."
        );
        let _ = writeln!(out, "    pub fn encoded_len(&self, version: i16) -> Result<usize, EncodeError> {{\n        match self {{");
        for a in apis {
            let _ = writeln!(
                out,
                "            {enum_name}::{}(m) => m.encoded_len(version),",
                a.name
            );
        }
        let _ = writeln!(out, "        }}\n    }}\n");
        let _ = writeln!(
            out,
            "    /// The default-valued {what} of `api_key` (every field at its spec default)."
        );
        let _ = writeln!(
            out,
            "    pub fn default_for(api_key: ApiKey) -> Self {{\n        match api_key {{"
        );
        for a in apis {
            let _ = writeln!(
                out,
                "            ApiKey::{} => {enum_name}::{}(Default::default()),",
                a.name, a.name
            );
        }
        let _ = writeln!(out, "        }}\n    }}\n");
        let _ = writeln!(out, "    /// The API this body belongs to.");
        let _ = writeln!(
            out,
            "    pub fn api_key(&self) -> ApiKey {{\n        match self {{"
        );
        for a in apis {
            let _ = writeln!(
                out,
                "            {enum_name}::{}(_) => ApiKey::{},",
                a.name, a.name
            );
        }
        let _ = writeln!(out, "        }}\n    }}\n}}\n");
        for a in apis {
            let _ = writeln!(
                out,
                "impl From<{n}{suffix}> for {enum_name} {{\n    fn from(m: {n}{suffix}) -> Self {{\n        {enum_name}::{n}(m)\n    }}\n}}\n",
                n = a.name
            );
        }

        // The borrowed counterpart.
        let _ = writeln!(
            out,
            "/// The borrowed view of any {what} body (see [`crate::view`]), one variant per API."
        );
        let _ = writeln!(
            out,
            "#[derive(Debug, Clone, Copy, PartialEq)]\npub enum {enum_name}View<'a> {{"
        );
        for a in apis {
            let _ = writeln!(out, "    /// A `{}{suffix}`.", a.name);
            let _ = writeln!(out, "    {}({}{suffix}View<'a>),", a.name, a.name);
        }
        let _ = writeln!(out, "}}\n");
        let _ = writeln!(out, "impl<'a> {enum_name}View<'a> {{");
        let _ = writeln!(
            out,
            "    /// Decodes the body of `api_key` at `version` from `buf` without allocating."
        );
        let _ = writeln!(out, "    pub fn decode_view(api_key: ApiKey, version: i16, buf: &mut &'a [u8]) -> Result<Self, DecodeError> {{\n        Ok(match api_key {{");
        for a in apis {
            let _ = writeln!(
                out,
                "            ApiKey::{n} => {enum_name}View::{n}({n}{suffix}View::decode_view(buf, version)?),",
                n = a.name
            );
        }
        let _ = writeln!(out, "        }})\n    }}\n");
        let _ = writeln!(out, "    /// The owned body.");
        let _ = writeln!(
            out,
            "    pub fn to_body(&self) -> {enum_name} {{\n        match self {{"
        );
        for a in apis {
            let _ = writeln!(
                out,
                "            {enum_name}View::{n}(v) => {enum_name}::{n}(v.to_message()),",
                n = a.name
            );
        }
        let _ = writeln!(out, "        }}\n    }}\n");
        let _ = writeln!(out, "    /// The API this body belongs to.");
        let _ = writeln!(
            out,
            "    pub fn api_key(&self) -> ApiKey {{\n        match self {{"
        );
        for a in apis {
            let _ = writeln!(
                out,
                "            {enum_name}View::{n}(_) => ApiKey::{n},",
                n = a.name
            );
        }
        let _ = writeln!(out, "        }}\n    }}\n}}\n");
    }
    out
}

/// Emits `ResponseBody::set_throttle_time_ms`: one arm per response whose top-level struct has an
/// int32 `ThrottleTimeMs` (a quota's throttle goes into every response that can carry it).
pub fn emit_throttle_time(apis: &[Api<'_>]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "//! `ResponseBody::set_throttle_time_ms`. Generated by josef-protocol-codegen. Do not edit.\n"
    );
    let _ = writeln!(out, "use super::ResponseBody;\n");
    let _ = writeln!(out, "impl ResponseBody {{");
    let _ = writeln!(
        out,
        "    /// Sets the top-level `throttle_time_ms` of a response that has one; returns false (and\n    /// changes nothing) for a response without it."
    );
    let _ = writeln!(
        out,
        "    pub fn set_throttle_time_ms(&mut self, ms: i32) -> bool {{\n        match self {{"
    );
    for a in apis {
        let has = a.response.structs.first().is_some_and(|s| {
            s.fields
                .iter()
                .any(|f| f.name == "ThrottleTimeMs" && f.ty == Ty::Prim(Prim::Int32))
        });
        if has {
            let _ = writeln!(
                out,
                "            ResponseBody::{}(r) => r.throttle_time_ms = ms,",
                a.name
            );
        }
    }
    let _ = writeln!(
        out,
        "            _ => return false,\n        }}\n        true\n    }}\n}}"
    );
    out
}

fn value_fn_name(module: &str, st: &str) -> String {
    format!("{module}_{}", snake_case(st).trim_end_matches('_'))
}

/// Expression producing a random non-null value of `ty` (uses `g`, `version`).
fn random_plain(module: &str, ty: &Ty) -> String {
    match ty {
        Ty::Prim(p) => match p {
            Prim::Bool => "g.bool()".to_string(),
            Prim::Int8 => "g.next() as i8".to_string(),
            Prim::Int16 => "g.next() as i16".to_string(),
            Prim::Uint16 => "g.next() as u16".to_string(),
            Prim::Int32 => "g.next() as i32".to_string(),
            Prim::Uint32 => "g.next() as u32".to_string(),
            Prim::Int64 => "g.next() as i64".to_string(),
            Prim::Float64 => "g.float()".to_string(),
            Prim::String => "g.string()".to_string(),
            Prim::Uuid => "g.uuid()".to_string(),
            Prim::Bytes => "g.bytes()".to_string(),
            Prim::Records => "g.records()".to_string(),
        },
        Ty::Struct(s) => format!("{}(g, version)", value_fn_name(module, s)),
        Ty::Array(inner) => format!(
            "(0..g.len()).map(|_| {}).collect::<{}<_>>()",
            random_plain(module, inner),
            if inline_capacity(inner).is_some() {
                "SmallVec"
            } else {
                "Vec"
            }
        ),
    }
}

/// Emits the test-support file with random-value builders for every generated struct.
pub fn emit_test_values(specs: &[(&str, &Spec)], apis: &[Api<'_>]) -> Result<String, String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "//! Random values of every generated struct, honouring which fields each version has, which are\n\
         //! nullable and which are tagged. Generated by josef-protocol-codegen. Do not edit.\n"
    );
    let _ = writeln!(
        out,
        "#![allow(dead_code, unused_variables, unused_mut, clippy::all)]\n"
    );
    let _ = writeln!(out, "use josef_protocol::*;\n");
    out.push_str(
        r#"/// A small deterministic generator (xorshift64*), seeded by proptest.
pub struct Gen(u64);

impl Gen {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Gen {
        Gen(seed | 1)
    }
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A coin flip.
    pub fn bool(&mut self) -> bool {
        self.next() & 1 == 1
    }
    /// A finite float (NaN would defeat equality).
    pub fn float(&mut self) -> f64 {
        (self.next() as i32) as f64 / 7.0
    }
    /// A short array length.
    pub fn len(&mut self) -> usize {
        (self.next() % 3) as usize
    }
    /// A short string, sometimes with multi-byte characters.
    pub fn string(&mut self) -> StrBytes {
        let n = self.next() % 6;
        let mut s = String::new();
        for _ in 0..n {
            let c = match self.next() % 8 {
                0 => 'é',
                1 => '🦀',
                k => (b'a' + (self.next() % 26) as u8 + (k as u8 & 0)) as char,
            };
            s.push(c);
        }
        StrBytes::from(s)
    }
    /// Short random bytes.
    pub fn bytes(&mut self) -> bytes::Bytes {
        let n = self.next() % 6;
        (0..n).map(|_| self.next() as u8).collect::<Vec<u8>>().into()
    }
    /// Random `records` bytes: usually short, sometimes a few KiB (large enough that an encoder
    /// into `FrameChunks` shares rather than copies them).
    pub fn records(&mut self) -> bytes::Bytes {
        if self.next() % 4 == 0 {
            let n = 2000 + self.next() % 2000;
            vec![self.next() as u8; n as usize].into()
        } else {
            self.bytes()
        }
    }
    /// A random uuid.
    pub fn uuid(&mut self) -> Uuid {
        Uuid::from_u64_pair(self.next(), self.next())
    }
    /// Sometimes, tagged fields this code does not know (tags above every known tag).
    pub fn unknown_tagged_fields(&mut self) -> UnknownTaggedFields {
        let mut m = UnknownTaggedFields::new();
        if self.next() % 4 == 0 {
            for _ in 0..1 + self.next() % 2 {
                let tag = 1000 + (self.next() % 300) as u32;
                let data = self.bytes();
                m.insert(tag, data);
            }
        }
        m
    }
}

"#,
    );
    for (root, spec) in specs {
        let module = module_name(&spec.name);
        let ctx = Ctx { spec };
        for st in &spec.structs {
            let fname = value_fn_name(&module, &st.name);
            let path = format!("{root}::{module}::{}", st.name);
            let _ = writeln!(out, "/// A random `{}` valid at `version`.", path);
            let _ = writeln!(
                out,
                "pub fn {fname}(g: &mut Gen, version: i16) -> {path} {{"
            );
            let _ = writeln!(out, "    let mut m = {path}::default();");
            for f in &st.fields {
                let name = snake_case(&f.name);
                let plain = random_plain(&module, &f.ty);
                let value = if !is_option(f) {
                    plain
                } else {
                    let nullable = f.nullable.intersect(&f.versions);
                    if nullable.is_empty() {
                        format!("Some({plain})")
                    } else {
                        format!(
                            "if {} && g.next() % 4 == 0 {{ None }} else {{ Some({plain}) }}",
                            ctx.cond_or_true(&nullable)
                        )
                    }
                };
                match ctx.cond(&f.versions) {
                    None => {
                        let _ = writeln!(out, "    m.{name} = {value};");
                    }
                    Some(c) if c == "false" => {}
                    Some(c) => {
                        let _ = writeln!(out, "    if {c} {{ m.{name} = {value}; }}");
                    }
                }
            }
            if ctx.has_flexible() {
                let _ = writeln!(
                    out,
                    "    if {} {{ m.unknown_tagged_fields = g.unknown_tagged_fields(); }}",
                    ctx.cond_or_true(&spec.flexible)
                );
            }
            let _ = writeln!(out, "    m\n}}\n");
        }
    }
    for (enum_name, suffix) in [("RequestBody", "Request"), ("ResponseBody", "Response")] {
        let _ = writeln!(
            out,
            "/// A random {enum_name} of `api_key` valid at `version`."
        );
        let _ = writeln!(
            out,
            "pub fn random_{}(api_key: ApiKey, g: &mut Gen, version: i16) -> {enum_name} {{\n    match api_key {{",
            suffix.to_lowercase()
        );
        for a in apis {
            let module = module_name(&format!("{}{suffix}", a.name));
            let _ = writeln!(
                out,
                "        ApiKey::{} => {enum_name}::{}({}(g, version)),",
                a.name,
                a.name,
                value_fn_name(&module, &format!("{}{suffix}", a.name))
            );
        }
        let _ = writeln!(out, "    }}\n}}\n");
    }
    let _ = writeln!(
        out,
        "/// Something checking one message at one version.\npub trait CheckMessage {{\n    /// Checks `m` at `version`.\n    fn check<M: Message>(&mut self, name: &str, m: &M, version: i16);\n}}\n"
    );
    let _ = writeln!(
        out,
        "/// Calls `c` with a random value of every data message, coordinator record and header at every version.\npub fn for_each_non_rpc_message(g: &mut Gen, c: &mut impl CheckMessage) {{"
    );
    for (root, spec) in specs {
        if matches!(spec.kind, Kind::Request | Kind::Response) {
            continue;
        }
        let module = module_name(&spec.name);
        let _ = writeln!(
            out,
            "    for version in {}..={} {{ c.check(\"{}\", &{}(g, version), version); }}",
            spec.valid.lo,
            spec.valid.hi,
            spec.name,
            value_fn_name(&module, &spec.name)
        );
        let _ = root;
    }
    let _ = writeln!(out, "}}");
    Ok(out)
}
