//! Borrowed views (`XView<'a>`) of the generated structs: their definition, their decoder (the
//! same checks, in the same order, as the owned decoder, so that both accept the same input) and
//! their conversion to the owned struct.

use super::{
    default_expr_of, doc_field, inline_versions, is_option, prim_get, prim_rust, snake_case,
    tagged_versions, Ctx,
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
        Ty::Struct(s) => format!("{s}View::decode_view(buf, version)"),
        Ty::Array(_) => format!("read::get_array(buf, {flex}, version)"),
    }
}

fn read_nullable(ty: &Ty, flex: &str) -> Result<String, String> {
    Ok(match ty {
        Ty::Prim(Prim::String) => format!("read::get_nullable_str(buf, {flex})"),
        Ty::Prim(Prim::Bytes | Prim::Records) => format!("read::get_nullable_bytes(buf, {flex})"),
        Ty::Struct(s) => {
            format!("read::get_nullable_struct(buf, |buf| {s}View::decode_view(buf, version))")
        }
        Ty::Array(_) => format!("read::get_nullable_array(buf, {flex}, version)"),
        Ty::Prim(p) => return Err(format!("nullable {} is not supported", p.spec_name())),
    })
}

/// Mirrors the owned `read_field`.
fn read_field(ctx: &Ctx<'_>, f: &Field, flex: &str) -> Result<String, String> {
    if !is_option(f) {
        return Ok(read_plain(&f.ty, flex));
    }
    let nullable = f.nullable.intersect(&f.versions);
    if nullable.is_empty() {
        return Ok(format!("{}.map(Some)", read_plain(&f.ty, flex)));
    }
    let versions = f.versions.intersect(&ctx.spec.valid);
    if nullable.contains_range(&versions) {
        return read_nullable(&f.ty, flex);
    }
    Ok(format!(
        "if {} {{ {} }} else {{ {}.map(Some) }}",
        ctx.cond_or_true(&nullable),
        read_nullable(&f.ty, flex)?,
        read_plain(&f.ty, flex)
    ))
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
    if phantom {
        let _ = writeln!(out, "            _frame: std::marker::PhantomData,");
    }
    let _ = writeln!(out, "        }}\n    }}\n}}\n");

    let flex_cond = if flexible {
        ctx.cond_or_true(&spec.flexible)
    } else {
        "false".to_string()
    };

    // Decode: the owned decoder's statements over a slice.
    let _ = writeln!(out, "impl<'a> DecodeView<'a> for {name}View<'a> {{");
    if !top {
        let _ = writeln!(out, "    #[inline]");
    }
    let _ = writeln!(
        out,
        "    fn decode_view(buf: &mut &'a [u8], version: i16) -> Result<Self, DecodeError> {{"
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
            "            tagged_fields = read::finish_tagged_fields(start, buf, count, version);"
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
    if phantom {
        let _ = writeln!(out, "            _frame: std::marker::PhantomData,");
    }
    let _ = writeln!(out, "        }})\n    }}\n}}\n");

    // Array element.
    let _ = writeln!(
        out,
        "impl<'a> ViewElement<'a> for {name}View<'a> {{\n    #[inline]\n    fn read_element(buf: &mut &'a [u8], version: i16, _flexible: bool) -> Result<Self, DecodeError> {{\n        Self::decode_view(buf, version)\n    }}\n}}\n"
    );

    // To the owned struct.
    let _ = writeln!(
        out,
        "impl MessageView for {name}View<'_> {{\n    type Owned = {name};\n    fn to_message(&self) -> {name} {{"
    );
    if flexible {
        let _ = writeln!(
            out,
            "        let version = self.tagged_fields.version();\n        let mut unknown_tagged_fields = UnknownTaggedFields::new();"
        );
        let _ = writeln!(
            out,
            "        for (tag, data) in self.tagged_fields.iter() {{\n            let known = match tag {{"
        );
        for f in &tagged {
            let (tag, tv) = tagged_versions(f).ok_or("tagged")?;
            let guard = match ctx.cond(&tv) {
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
    }
    if flexible {
        let _ = writeln!(out, "            unknown_tagged_fields,");
    }
    let _ = writeln!(out, "        }}\n    }}\n}}\n");
    Ok(())
}
