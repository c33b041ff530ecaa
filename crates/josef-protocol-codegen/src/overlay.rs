//! Our own version overlay (`version-overlay.json` in this crate): versions Kafka added after the
//! specs we generate from were taken, whose wire shape is that of the version before them (only
//! what the broker does with them changed). For each named message, the valid versions are raised
//! to the overlay's maximum and every version range of a field that ended at the old maximum is
//! extended with it, so the new version encodes exactly like the previous one.

use serde_json::Value;

use crate::spec::{Spec, Versions};

/// The overlay shipped with the generator.
pub const VERSION_OVERLAY: &str = include_str!("../version-overlay.json");

/// The new maximum version of each message the overlay names.
pub fn parse(text: &str) -> Result<Vec<(String, i16)>, String> {
    let json: Value = serde_json::from_str(text).map_err(|e| format!("version overlay: {e}"))?;
    let Some(Value::Object(messages)) = json.get("messages") else {
        return Err("version overlay: no \"messages\" object".into());
    };
    messages
        .iter()
        .map(|(name, entry)| {
            let max = entry
                .get("maxVersion")
                .and_then(Value::as_i64)
                .and_then(|v| i16::try_from(v).ok())
                .ok_or_else(|| format!("version overlay: {name} has no maxVersion"))?;
            Ok((name.clone(), max))
        })
        .collect()
}

/// Raises `spec` to `max` if it is one of `entries`. An entry that would lower the versions, or
/// skip one, is an error: the specs caught up (or the overlay is wrong) and it must go.
pub fn apply(spec: &mut Spec, entries: &[(String, i16)]) -> Result<(), String> {
    let Some(&(_, max)) = entries.iter().find(|(n, _)| *n == spec.name) else {
        return Ok(());
    };
    let old = spec.valid.hi;
    if max != old + 1 {
        return Err(format!(
            "version overlay: {} is at version {old} in the specs; the overlay's {max} is not the next one",
            spec.name
        ));
    }
    let extend = |v: &mut Versions| {
        if v.hi == old {
            v.hi = max;
        }
    };
    extend(&mut spec.valid);
    extend(&mut spec.flexible);
    if let Some(d) = spec.deprecated.as_mut() {
        extend(d);
    }
    for s in &mut spec.structs {
        for f in &mut s.fields {
            extend(&mut f.versions);
            extend(&mut f.nullable);
            if let Some((_, t)) = f.tagged.as_mut() {
                extend(t);
            }
            if let Some(o) = f.flexible_override.as_mut() {
                extend(o);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"{
      "apiKey": 99, "type": "request", "name": "XRequest",
      "validVersions": "0-3", "flexibleVersions": "2+",
      "fields": [
        { "name": "A", "type": "int32", "versions": "0+" },
        { "name": "B", "type": "int32", "versions": "1-3" },
        { "name": "C", "type": "int32", "versions": "0-1" }
      ]
    }"#;

    #[test]
    fn the_next_version_has_the_shape_of_the_last() {
        let mut spec = crate::spec::parse_spec("XRequest", SPEC).unwrap();
        apply(&mut spec, &[("XRequest".into(), 4)]).unwrap();
        assert_eq!(spec.valid, Versions { lo: 0, hi: 4 });
        let f = &spec.structs[0].fields;
        assert_eq!(f[0].versions.hi, i16::MAX);
        assert_eq!(f[1].versions, Versions { lo: 1, hi: 4 });
        assert_eq!(f[2].versions, Versions { lo: 0, hi: 1 });
    }

    #[test]
    fn an_entry_the_specs_caught_up_with_is_refused() {
        let mut spec = crate::spec::parse_spec("XRequest", SPEC).unwrap();
        assert!(apply(&mut spec, &[("XRequest".into(), 3)]).is_err());
        assert!(apply(&mut spec, &[("XRequest".into(), 5)]).is_err());
        // Other messages are left alone.
        apply(&mut spec, &[("YRequest".into(), 9)]).unwrap();
        assert_eq!(spec.valid.hi, 3);
    }

    #[test]
    fn the_shipped_overlay_parses() {
        let entries = parse(VERSION_OVERLAY).unwrap();
        assert!(entries.contains(&("ProduceRequest".into(), 12)));
    }
}
