//! The model of Kafka's JSON message specs, parsed from the `messages/`, `coordinator-records/` and
//! `metadata-records/` files.

use serde_json::Value;

/// An inclusive range of versions; `lo > hi` means no version at all ("none").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    /// First version in the range.
    pub lo: i16,
    /// Last version in the range (`i16::MAX` for an open-ended "N+").
    pub hi: i16,
}

impl Versions {
    /// The empty range.
    pub const NONE: Versions = Versions { lo: 1, hi: 0 };

    /// Parses "none", "N", "N+" and "N-M".
    pub fn parse(s: &str) -> Result<Versions, String> {
        let s = s.trim();
        if s == "none" {
            return Ok(Versions::NONE);
        }
        let num = |t: &str| {
            t.trim()
                .parse::<i16>()
                .map_err(|e| format!("bad version '{s}': {e}"))
        };
        if let Some(lo) = s.strip_suffix('+') {
            return Ok(Versions {
                lo: num(lo)?,
                hi: i16::MAX,
            });
        }
        if let Some((lo, hi)) = s.split_once('-') {
            return Ok(Versions {
                lo: num(lo)?,
                hi: num(hi)?,
            });
        }
        let v = num(s)?;
        Ok(Versions { lo: v, hi: v })
    }

    /// True when no version is in the range.
    pub fn is_empty(&self) -> bool {
        self.lo > self.hi
    }

    /// Intersection of two ranges.
    pub fn intersect(&self, other: &Versions) -> Versions {
        Versions {
            lo: self.lo.max(other.lo),
            hi: self.hi.min(other.hi),
        }
    }

    /// True when `other` lies inside `self`.
    pub fn contains_range(&self, other: &Versions) -> bool {
        other.is_empty() || (self.lo <= other.lo && self.hi >= other.hi)
    }

    /// Human-readable form for docs: "none", "3+", "0-7", "5".
    pub fn describe(&self) -> String {
        if self.is_empty() {
            "none".to_string()
        } else if self.hi == i16::MAX {
            format!("{}+", self.lo)
        } else if self.lo == self.hi {
            format!("{}", self.lo)
        } else {
            format!("{}-{}", self.lo, self.hi)
        }
    }
}

/// A primitive field type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prim {
    /// `bool`
    Bool,
    /// `int8`
    Int8,
    /// `int16`
    Int16,
    /// `uint16`
    Uint16,
    /// `int32`
    Int32,
    /// `uint32`
    Uint32,
    /// `int64`
    Int64,
    /// `float64`
    Float64,
    /// `string`
    String,
    /// `uuid`
    Uuid,
    /// `bytes`
    Bytes,
    /// `records`
    Records,
}

impl Prim {
    fn parse(s: &str) -> Option<Prim> {
        Some(match s {
            "bool" => Prim::Bool,
            "int8" => Prim::Int8,
            "int16" => Prim::Int16,
            "uint16" => Prim::Uint16,
            "int32" => Prim::Int32,
            "uint32" => Prim::Uint32,
            "int64" => Prim::Int64,
            "float64" => Prim::Float64,
            "string" => Prim::String,
            "uuid" => Prim::Uuid,
            "bytes" => Prim::Bytes,
            "records" => Prim::Records,
            _ => return None,
        })
    }

    /// The spec's spelling of the type.
    pub fn spec_name(&self) -> &'static str {
        match self {
            Prim::Bool => "bool",
            Prim::Int8 => "int8",
            Prim::Int16 => "int16",
            Prim::Uint16 => "uint16",
            Prim::Int32 => "int32",
            Prim::Uint32 => "uint32",
            Prim::Int64 => "int64",
            Prim::Float64 => "float64",
            Prim::String => "string",
            Prim::Uuid => "uuid",
            Prim::Bytes => "bytes",
            Prim::Records => "records",
        }
    }
}

/// A field's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    /// A primitive.
    Prim(Prim),
    /// A struct, by name.
    Struct(String),
    /// An array of a primitive or a struct.
    Array(Box<Ty>),
}

impl Ty {
    fn parse(s: &str) -> Result<Ty, String> {
        if let Some(inner) = s.strip_prefix("[]") {
            let inner = Ty::parse(inner)?;
            if matches!(inner, Ty::Array(_)) {
                return Err(format!("nested arrays are not supported: {s}"));
            }
            return Ok(Ty::Array(Box::new(inner)));
        }
        if let Some(p) = Prim::parse(s) {
            return Ok(Ty::Prim(p));
        }
        if s.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
            return Ok(Ty::Struct(s.to_string()));
        }
        Err(format!("unknown type {s}"))
    }

    /// The spec's spelling of the type.
    pub fn spec_name(&self) -> String {
        match self {
            Ty::Prim(p) => p.spec_name().to_string(),
            Ty::Struct(s) => s.clone(),
            Ty::Array(t) => format!("[]{}", t.spec_name()),
        }
    }
}

/// A field's default value as written in the spec (JSON strings and numbers both appear).
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultLit {
    /// `"null"` or JSON `null`.
    Null,
    /// Any other value, as text.
    Text(String),
}

/// One field of a struct.
#[derive(Debug, Clone)]
pub struct Field {
    /// The spec's PascalCase name.
    pub name: String,
    /// The type.
    pub ty: Ty,
    /// Versions in which the field exists.
    pub versions: Versions,
    /// Versions in which it may be null.
    pub nullable: Versions,
    /// Tag and tagged versions, for tagged fields.
    pub tagged: Option<(u32, Versions)>,
    /// Whether dropping a non-default value in versions without the field is allowed.
    pub ignorable: bool,
    /// Custom default.
    pub default: Option<DefaultLit>,
    /// Field-level override of the message's flexible versions (the request header's client id).
    pub flexible_override: Option<Versions>,
    /// Whether the field is a map key of its array.
    pub map_key: bool,
}

/// A struct: the message itself, an inline struct or a common struct.
#[derive(Debug, Clone)]
pub struct StructDef {
    /// Its name.
    pub name: String,
    /// Its fields in wire order.
    pub fields: Vec<Field>,
}

/// What a spec file describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A request (has an api key).
    Request,
    /// A response (has an api key).
    Response,
    /// A request or response header.
    Header,
    /// Versioned data that is not an RPC (coordinator records, consumer protocol, ...).
    Data,
    /// A record of the KRaft metadata log (`__cluster_metadata`); its api key is the record type.
    Metadata,
}

/// One spec file.
#[derive(Debug, Clone)]
pub struct Spec {
    /// File stem, e.g. `ProduceRequest`.
    pub name: String,
    /// Request, response, header or data.
    pub kind: Kind,
    /// Api key of requests and responses.
    pub api_key: Option<i16>,
    /// validVersions.
    pub valid: Versions,
    /// flexibleVersions.
    pub flexible: Versions,
    /// deprecatedVersions, when given.
    pub deprecated: Option<Versions>,
    /// All structs: the top-level one first, then nested ones in order of appearance, then common structs.
    pub structs: Vec<StructDef>,
}

/// Removes `//` comments (outside string literals) so that serde_json can parse the file.
pub fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_str = false;
        let mut escaped = false;
        let mut cut = line.len();
        let bytes = line.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i];
            if in_str {
                if escaped {
                    escaped = false;
                } else if c == b'\\' {
                    escaped = true;
                } else if c == b'"' {
                    in_str = false;
                }
            } else if c == b'"' {
                in_str = true;
            } else if c == b'/' && i + 1 < bytes.len() && bytes[i + 1] == b'/' {
                cut = i;
                break;
            }
            i += 1;
        }
        out.push_str(&line[..cut]);
        out.push('\n');
    }
    out
}

fn get_str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(|x| x.as_str())
}

fn parse_versions_opt(v: &Value, key: &str) -> Result<Option<Versions>, String> {
    match v.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Versions::parse(s).map(Some),
        Some(other) => Err(format!("{key}: expected a string, got {other}")),
    }
}

/// Parses one spec file's text.
pub fn parse_spec(file_stem: &str, text: &str) -> Result<Spec, String> {
    let json: Value =
        serde_json::from_str(&strip_comments(text)).map_err(|e| format!("{file_stem}: {e}"))?;
    let name = get_str(&json, "name").ok_or("missing name")?.to_string();
    let kind = match get_str(&json, "type").ok_or("missing type")? {
        "request" => Kind::Request,
        "response" => Kind::Response,
        "header" => Kind::Header,
        "data" => Kind::Data,
        "metadata" => Kind::Metadata,
        other => return Err(format!("{name}: unknown message type {other}")),
    };
    let api_key = json
        .get("apiKey")
        .and_then(|v| v.as_i64())
        .map(|v| v as i16);
    let valid = Versions::parse(get_str(&json, "validVersions").ok_or("missing validVersions")?)?;
    let flexible = match get_str(&json, "flexibleVersions") {
        Some(s) => Versions::parse(s)?,
        None => Versions::NONE,
    };
    let deprecated = parse_versions_opt(&json, "deprecatedVersions")?;
    let mut structs = Vec::new();
    let fields = parse_fields(&json, &mut structs).map_err(|e| format!("{name}: {e}"))?;
    structs.insert(
        0,
        StructDef {
            name: name.clone(),
            fields,
        },
    );
    if let Some(Value::Array(common)) = json.get("commonStructs") {
        for c in common {
            let cname = get_str(c, "name")
                .ok_or("common struct without a name")?
                .to_string();
            let fields =
                parse_fields(c, &mut structs).map_err(|e| format!("{name}.{cname}: {e}"))?;
            structs.push(StructDef {
                name: cname,
                fields,
            });
        }
    }
    Ok(Spec {
        name,
        kind,
        api_key,
        valid,
        flexible,
        deprecated,
        structs,
    })
}

fn parse_fields(parent: &Value, structs: &mut Vec<StructDef>) -> Result<Vec<Field>, String> {
    let mut out = Vec::new();
    let Some(Value::Array(fields)) = parent.get("fields") else {
        return Ok(out);
    };
    for f in fields {
        let name = get_str(f, "name")
            .ok_or("field without a name")?
            .to_string();
        let ty_s = get_str(f, "type").ok_or_else(|| format!("{name}: no type"))?;
        let ty = Ty::parse(ty_s).map_err(|e| format!("{name}: {e}"))?;
        let tagged_versions = parse_versions_opt(f, "taggedVersions")?;
        let versions = match parse_versions_opt(f, "versions")? {
            Some(v) => v,
            None => tagged_versions.ok_or_else(|| format!("{name}: no versions"))?,
        };
        let nullable = parse_versions_opt(f, "nullableVersions")?.unwrap_or(Versions::NONE);
        let tag = match f.get("tag") {
            None => None,
            Some(Value::Number(n)) => Some(n.as_u64().ok_or("bad tag")? as u32),
            Some(Value::String(s)) => {
                Some(s.parse::<u32>().map_err(|e| format!("{name}: tag {e}"))?)
            }
            Some(other) => return Err(format!("{name}: bad tag {other}")),
        };
        let tagged = match (tag, tagged_versions) {
            (Some(t), Some(v)) => Some((t, v)),
            (None, None) => None,
            _ => return Err(format!("{name}: tag and taggedVersions must come together")),
        };
        let ignorable = f
            .get("ignorable")
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        let default = match f.get("default") {
            None => None,
            Some(Value::Null) => Some(DefaultLit::Null),
            Some(Value::String(s)) if s == "null" => Some(DefaultLit::Null),
            Some(Value::String(s)) => Some(DefaultLit::Text(s.clone())),
            Some(Value::Number(n)) => Some(DefaultLit::Text(n.to_string())),
            Some(Value::Bool(b)) => Some(DefaultLit::Text(b.to_string())),
            Some(other) => return Err(format!("{name}: bad default {other}")),
        };
        let flexible_override = parse_versions_opt(f, "flexibleVersions")?;
        let map_key = f.get("mapKey").and_then(|v| v.as_bool()).unwrap_or(false);
        if f.get("fields").is_some() {
            let sname = match &ty {
                Ty::Struct(s) => s.clone(),
                Ty::Array(inner) => match inner.as_ref() {
                    Ty::Struct(s) => s.clone(),
                    _ => return Err(format!("{name}: fields on an array of primitives")),
                },
                _ => return Err(format!("{name}: fields on a primitive")),
            };
            let sub = parse_fields(f, structs)?;
            if structs.iter().any(|s| s.name == sname) {
                return Err(format!("struct {sname} defined twice"));
            }
            structs.push(StructDef {
                name: sname,
                fields: sub,
            });
        }
        out.push(Field {
            name,
            ty,
            versions,
            nullable,
            tagged,
            ignorable,
            default,
            flexible_override,
            map_key,
        });
    }
    Ok(out)
}
