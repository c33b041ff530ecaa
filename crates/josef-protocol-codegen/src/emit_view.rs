//! Borrowed views (`XView<'a>`) of the generated structs: their definition, their decoder (the
//! same checks, in the same order, as the owned decoder, so that both accept the same input) and
//! their conversion to the owned struct.

use super::{
    default_expr_of, doc_field, has_file_sibling, inline_versions, is_option, prim_get, prim_rust,
    snake_case, tagged_versions, Ctx,
};
use crate::spec::{Field, Prim, StructDef, Ty};
use std::fmt::Write as _;

fn view_base(ty: &Ty) -> String {
    match ty {
        Ty::Prim(Prim::String) => "&'a str".to_string(),
        Ty::Prim(Prim::Bytes | Prim::Records) => "&'a [u8]".to_string(),
        Ty::Prim(p) => prim_rust(*p).to_string(),
        Ty::Struct(s) => format!("{s}View<'a>"),
        Ty::Array(inner) => format!("ArrayView<'a, {}>", view_base(inner)),
    }
}

fn view_field_rust(f: &Field) -> String {
    if is_option(f) {
        format!("Option<{}>", view_base(&f.ty))
    } else {
        view_base(&f.ty)
    }
}

fn read_plain(ty: &Ty, flex: &str) -> String {
    match ty {
        Ty::Prim(Prim::String) => format!("read::get_str(buf, {flex})"),
        Ty::Prim(Prim::Bytes | Prim::Records) => format!("read::get_bytes(buf, {flex})"),
        Ty::Prim(p) => format!("read::{}(buf)", prim_get(*p)),
        Ty::Struct(s) => format!("{s}View::decode_view_with::<CHECKED>(buf, version)"),
        Ty::Array(_) => format!("read::get_array::<_, CHECKED>(buf, {flex}, version)"),
    }
}

fn read_nullable(ty: &Ty, flex: &str) -> Result<String, String> {
    Ok(match ty {
        Ty::Prim(Prim::String) => format!("read::get_nullable_str(buf, {flex})"),
        Ty::Prim(Prim::Bytes | Prim::Records) => format!("read::get_nullable_bytes(buf, {flex})"),
        Ty::Struct(s) => {
            format!("read::get_nullable_struct(buf, |buf| {s}View::decode_view_with::<CHECKED>(buf, version))")
        }
        Ty::Array(_) => format!("read::get_nullable_array::<_, CHECKED>(buf, {flex}, version)"),
        Ty::Prim(p) => return Err(format!("nullable {} is not supported", p.spec_name())),
    })
}

/// The owned decoder's `read_field` with the view's readers.
fn read_field(ctx: &Ctx<'_>, f: &Field, flex: &str) -> Result<String, String> {
    super::read_field_with(ctx, f, flex, read_plain, read_nullable)
}

/// Statements skipping a non-null value of `ty` (the input was checked before).
fn skip_plain(ty: &Ty, flex: &str) -> String {
    match ty {
        Ty::Prim(Prim::String) => format!("read::skip_len(buf, {flex}, true)?;"),
        Ty::Prim(Prim::Bytes | Prim::Records) => format!("read::skip_len(buf, {flex}, false)?;"),
        Ty::Prim(p) => format!(
            "read::skip(buf, {})?;",
            super::prim_fixed_size(*p).unwrap_or(0)
        ),
        Ty::Struct(s) => format!("{s}View::skip_view(buf, version)?;"),
        Ty::Array(inner) => format!(
            "read::skip_array::<{}>(buf, {flex}, version)?;",
            view_base(inner)
        ),
    }
}

/// Statements skipping field `f` in a version where it is present: as `read_field`, a struct
/// has a null marker only in its nullable versions (strings, bytes and arrays encode null in
/// their length, which `skip_len` and `skip_array` read).
fn skip_field(ctx: &Ctx<'_>, f: &Field, flex: &str) -> String {
    let nullable = f.nullable.intersect(&f.versions);
    match &f.ty {
        Ty::Struct(_) if !nullable.is_empty() => {
            let versions = f.versions.intersect(&ctx.spec.valid);
            let marked = format!(
                "if read::get_i8(buf)? >= 0 {{ {} }}",
                skip_plain(&f.ty, flex)
            );
            if nullable.contains_range(&versions) {
                marked
            } else {
                format!(
                    "if {} {{ {marked} }} else {{ {} }}",
                    ctx.cond_or_true(&nullable),
                    skip_plain(&f.ty, flex)
                )
            }
        }
        _ => skip_plain(&f.ty, flex),
    }
}

/// Expression converting the view value `v` of type `ty` to the owned type.
fn to_owned_plain(ty: &Ty, v: &str, depth: usize) -> String {
    match ty {
        Ty::Prim(Prim::String) => format!("StrBytes::from({v})"),
        Ty::Prim(Prim::Bytes | Prim::Records) => format!("Bytes::copy_from_slice({v})"),
        Ty::Prim(_) => v.to_string(),
        Ty::Struct(_) => format!("{v}.to_message()"),
        Ty::Array(inner) => {
            let e = format!("e{depth}");
            match to_owned_plain(inner, &e, depth + 1) {
                conv if conv == e => format!("{v}.iter().collect()"),
                conv => format!("{v}.iter().map(|{e}| {conv}).collect()"),
            }
        }
    }
}

fn to_owned_field(f: &Field) -> String {
    let v = format!("self.{}", snake_case(&f.name));
    if is_option(f) {
        match to_owned_plain(&f.ty, "v", 0) {
            conv if conv == "v" => v,
            conv => format!("{v}.map(|v| {conv})"),
        }
    } else {
        to_owned_plain(&f.ty, &v, 0)
    }
}

fn tagged_fields(st: &StructDef) -> Vec<&Field> {
    let mut tagged: Vec<&Field> = st.fields.iter().filter(|f| f.tagged.is_some()).collect();
    tagged.sort_by_key(|f| f.tagged.map(|t| t.0));
    tagged
}

/// The guard, if any, under which a tagged field is known inside a tagged-field section (which
/// exists in flexible versions only): none when the field is tagged in every flexible version.
fn tag_guard(ctx: &Ctx<'_>, tv: &crate::spec::Versions) -> Option<String> {
    let flexible = ctx.spec.flexible.intersect(&ctx.spec.valid);
    if tv.contains_range(&flexible) {
        None
    } else {
        Some(ctx.cond(tv).unwrap_or_else(|| "true".to_string()))
    }
}

/// Emits `XView<'a>` for struct `X`.
pub(super) fn emit_view(
    ctx: &Ctx<'_>,
    st: &StructDef,
    top: bool,
    out: &mut String,
) -> Result<(), String> {
    let spec = ctx.spec;
    let flexible = ctx.has_flexible();
    let name = &st.name;
    // Which tagged fields are known can depend on the version: such views keep it.
    let needs_version = flexible
        && tagged_fields(st)
            .iter()
            .any(|f| tagged_versions(f).is_some_and(|(_, tv)| tag_guard(ctx, &tv).is_some()));
    // A view of fixed-size fields only still carries the frame's lifetime.
    let phantom = !flexible && !st.fields.iter().any(|f| view_field_rust(f).contains("'a"));
    let _ = writeln!(
        out,
        "/// A borrowed view of [`{name}`]: decoded from a slice without allocating (see [`crate::view`])."
    );
    let _ = writeln!(
        out,
        "#[derive(Debug, Clone, Copy, PartialEq)]\npub struct {name}View<'a> {{"
    );
    for f in &st.fields {
        let _ = writeln!(out, "    /// {}", doc_field(ctx, f));
        let _ = writeln!(
            out,
            "    pub {}: {},",
            snake_case(&f.name),
            view_field_rust(f)
        );
    }
    if flexible {
        let _ = writeln!(
            out,
            "    /// The tagged fields as read, known ones included (those are also in their fields)."
        );
        let _ = writeln!(out, "    pub tagged_fields: TaggedFieldsView<'a>,");
    }
    if needs_version {
        let _ = writeln!(
            out,
            "    /// The version the view was decoded at (which tagged fields are known depends on it)."
        );
        let _ = writeln!(out, "    pub version: i16,");
    }
    if phantom {
        let _ = writeln!(
            out,
            "    #[doc(hidden)]\n    pub _frame: std::marker::PhantomData<&'a [u8]>,"
        );
    }
    let _ = writeln!(out, "}}\n");

    // Default.
    let _ = writeln!(
        out,
        "impl Default for {name}View<'_> {{\n    fn default() -> Self {{\n        Self {{"
    );
    for f in &st.fields {
        let _ = writeln!(
            out,
            "            {}: {},",
            snake_case(&f.name),
            default_expr_of(f, true)?
        );
    }
    if flexible {
        let _ = writeln!(out, "            tagged_fields: TaggedFieldsView::empty(),");
    }
    if needs_version {
        let _ = writeln!(out, "            version: 0,");
    }
    if phantom {
        let _ = writeln!(out, "            _frame: std::marker::PhantomData,");
    }
    let _ = writeln!(out, "        }}\n    }}\n}}\n");

    let flex_cond = if flexible {
        ctx.cond_or_true(&spec.flexible)
    } else {
        "false".to_string()
    };

    // Decode: the owned decoder's statements over a slice. `CHECKED` is false when an array
    // element that was checked already is read again: nested arrays are then skipped over,
    // not checked element by element.
    let _ = writeln!(out, "impl<'a> DecodeView<'a> for {name}View<'a> {{");
    let _ = writeln!(
        out,
        "    #[inline]\n    fn decode_view(buf: &mut &'a [u8], version: i16) -> Result<Self, DecodeError> {{\n        Self::decode_view_with::<true>(buf, version)\n    }}\n}}\n"
    );
    let _ = writeln!(out, "impl<'a> {name}View<'a> {{");
    let _ = writeln!(
        out,
        "    /// Decodes the view; with `CHECKED` false, nested arrays are skipped, not checked (for input checked before)."
    );
    if !top {
        let _ = writeln!(out, "    #[inline(always)]");
    }
    let _ = writeln!(
        out,
        "    pub fn decode_view_with<const CHECKED: bool>(buf: &mut &'a [u8], version: i16) -> Result<Self, DecodeError> {{"
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
        let local = format!("f_{}", snake_case(&f.name));
        let inline = inline_versions(f);
        let mutability = if f.tagged.is_some() { "mut " } else { "" };
        let read = read_field(ctx, f, &ctx.flex_expr(f))?;
        let default = default_expr_of(f, true)?;
        match ctx.cond(&inline) {
            None => {
                let _ = writeln!(out, "        let {mutability}{local} = {read}?;");
            }
            Some(c) if c == "false" => {
                let _ = writeln!(out, "        let {mutability}{local} = {default};");
            }
            Some(c) => {
                let _ = writeln!(
                    out,
                    "        let {mutability}{local} = if {c} {{ {read}? }} else {{ {default} }};"
                );
            }
        }
    }
    let tagged = tagged_fields(st);
    if flexible {
        let _ = writeln!(
            out,
            "        let mut tagged_fields = TaggedFieldsView::empty();"
        );
        let _ = writeln!(out, "        if flexible {{");
        let _ = writeln!(out, "            let count = read::get_uvarint(buf)?;");
        let _ = writeln!(out, "            let start = *buf;");
        let _ = writeln!(out, "            let mut last_tag = None;");
        let _ = writeln!(out, "            for _ in 0..count {{");
        let _ = writeln!(
            out,
            "                let (tag, mut data) = read::get_tagged_field(buf, &mut last_tag)?;"
        );
        let _ = writeln!(out, "                match tag {{");
        for f in &tagged {
            let (tag, tv) = tagged_versions(f).ok_or("tagged")?;
            let read = read_field(ctx, f, "true")?;
            let guard = match ctx.cond(&tv) {
                None => String::new(),
                Some(c) => format!(" if {c}"),
            };
            let _ = writeln!(
                out,
                "                    {tag}{guard} => {{ let buf = &mut data; f_{} = {read}?; read::expect_consumed(buf, \"{}.{}\")?; }}",
                snake_case(&f.name),
                st.name,
                f.name
            );
        }
        let _ = writeln!(out, "                    _ => {{}}");
        let _ = writeln!(out, "                }}\n            }}");
        let _ = writeln!(
            out,
            "            tagged_fields = read::finish_tagged_fields(start, buf);"
        );
        let _ = writeln!(out, "        }}");
    }
    let _ = writeln!(out, "        Ok(Self {{");
    for f in &st.fields {
        let n = snake_case(&f.name);
        let _ = writeln!(out, "            {n}: f_{n},");
    }
    if flexible {
        let _ = writeln!(out, "            tagged_fields,");
    }
    if needs_version {
        let _ = writeln!(out, "            version,");
    }
    if phantom {
        let _ = writeln!(out, "            _frame: std::marker::PhantomData,");
    }
    let _ = writeln!(out, "        }})\n    }}\n");

    // Skip: the same walk, reading only lengths.
    let _ = writeln!(
        out,
        "    /// Moves `buf` past the struct, which was checked before, reading only lengths."
    );
    let _ = writeln!(
        out,
        "    #[inline]\n    pub fn skip_view(buf: &mut &'a [u8], version: i16) -> Result<(), DecodeError> {{"
    );
    let _ = writeln!(out, "        let flexible = {flex_cond};");
    // Runs of fixed-size fields are skipped with one bounds check.
    let mut fixed: Vec<String> = Vec::new();
    let flush = |fixed: &mut Vec<String>, out: &mut String| {
        if !fixed.is_empty() {
            let _ = writeln!(out, "        read::skip(buf, {})?;", fixed.join(" + "));
            fixed.clear();
        }
    };
    for f in &st.fields {
        let inline = inline_versions(f);
        let cond = ctx.cond(&inline);
        if cond.as_deref() == Some("false") {
            continue;
        }
        if let Ty::Prim(p) = &f.ty {
            if let Some(size) = super::prim_fixed_size(*p) {
                fixed.push(match &cond {
                    None => size.to_string(),
                    Some(c) => format!("(if {c} {{ {size} }} else {{ 0 }})"),
                });
                continue;
            }
        }
        flush(&mut fixed, out);
        let skip = skip_field(ctx, f, &ctx.flex_expr(f));
        match cond {
            None => {
                let _ = writeln!(out, "        {skip}");
            }
            Some(c) => {
                let _ = writeln!(out, "        if {c} {{ {skip} }}");
            }
        }
    }
    flush(&mut fixed, out);
    if flexible {
        let _ = writeln!(
            out,
            "        if flexible {{ read::skip_tagged_fields(buf)?; }}"
        );
    }
    let _ = writeln!(out, "        Ok(())\n    }}\n}}\n");

    // Array element.
    let _ = writeln!(
        out,
        "impl<'a> ViewElement<'a> for {name}View<'a> {{\n    #[inline(always)]\n    fn read_element(buf: &mut &'a [u8], version: i16, _flexible: bool) -> Result<Self, DecodeError> {{\n        Self::decode_view_with::<true>(buf, version)\n    }}\n    #[inline(always)]\n    fn read_checked_element(buf: &mut &'a [u8], version: i16, _flexible: bool) -> Result<Self, DecodeError> {{\n        Self::decode_view_with::<false>(buf, version)\n    }}\n    #[inline]\n    fn skip_element(buf: &mut &'a [u8], version: i16, _flexible: bool) -> Result<(), DecodeError> {{\n        Self::skip_view(buf, version)\n    }}\n}}\n"
    );

    // To the owned struct.
    let _ = writeln!(
        out,
        "impl MessageView for {name}View<'_> {{\n    type Owned = {name};\n    fn to_message(&self) -> {name} {{"
    );
    if flexible {
        let _ = writeln!(
            out,
            "        let mut unknown_tagged_fields = UnknownTaggedFields::new();"
        );
        if needs_version {
            let _ = writeln!(out, "        let version = self.version;");
        }
        let _ = writeln!(
            out,
            "        for (tag, data) in self.tagged_fields.iter() {{\n            let known = match tag {{"
        );
        for f in &tagged {
            let (tag, tv) = tagged_versions(f).ok_or("tagged")?;
            let guard = match tag_guard(ctx, &tv) {
                None => String::new(),
                Some(c) => format!(" if {c}"),
            };
            let _ = writeln!(out, "                {tag}{guard} => true,");
        }
        let _ = writeln!(
            out,
            "                _ => false,\n            }};\n            if !known {{ unknown_tagged_fields.insert(tag, Bytes::copy_from_slice(data)); }}\n        }}"
        );
    }
    let _ = writeln!(out, "        {name} {{");
    for f in &st.fields {
        let _ = writeln!(
            out,
            "            {}: {},",
            snake_case(&f.name),
            to_owned_field(f)
        );
        if has_file_sibling(ctx, f) {
            let _ = writeln!(out, "            {}_file: None,", snake_case(&f.name));
        }
    }
    if flexible {
        let _ = writeln!(out, "            unknown_tagged_fields,");
    }
    let _ = writeln!(out, "        }}\n    }}\n}}\n");
    Ok(())
}
