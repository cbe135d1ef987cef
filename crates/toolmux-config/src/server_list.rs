//! `mcpServers` as a list: `[{"name": "github", "command": "npx", ...}]`, the form some
//! clients and design documents write, accepted beside the usual object keyed by name and
//! normalised to it as soon as a file is read, so the rest of toolmux sees one form.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::upstream::{ServerName, UpstreamServer};

/// The key both forms live under.
pub(crate) const KEY: &str = "mcpServers";

/// Deserialises `mcpServers` from an object keyed by name, or from a list of servers that
/// each carry their `name` (an error names a name used twice).
pub(crate) fn object_or_list<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<ServerName, UpstreamServer>, D::Error> {
    struct ObjectOrList;
    impl<'de> Visitor<'de> for ObjectOrList {
        type Value = BTreeMap<ServerName, UpstreamServer>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(
                "an object of servers by name, or a list of servers that each have a `name`",
            )
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            Deserialize::deserialize(de::value::MapAccessDeserializer::new(map))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut servers = BTreeMap::new();
            while let Some(Named { name, server }) = seq.next_element()? {
                if servers.contains_key(&name) {
                    return Err(de::Error::custom(format!(
                        "two servers are named `{name}`; each needs its own name"
                    )));
                }
                servers.insert(name, server);
            }
            Ok(servers)
        }
    }
    d.deserialize_any(ObjectOrList)
}

/// One entry of the list form.
struct Named {
    name: ServerName,
    server: UpstreamServer,
}

impl<'de> Deserialize<'de> for Named {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entry;
        impl<'de> Visitor<'de> for Entry {
            type Value = Named;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a server object with a `name`")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Named, A::Error> {
                let mut name = None;
                let mut rest = Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "name" {
                        name = Some(map.next_value::<ServerName>()?);
                    } else {
                        // Values arrive with `${VAR}` references already expanded (the
                        // loader's deserializer expands every string it hands out).
                        rest.insert(key, map.next_value::<Value>()?);
                    }
                }
                let name = name.ok_or_else(|| de::Error::missing_field("name"))?;
                // The server's own fields are checked as one value: an error names the server.
                let server = UpstreamServer::deserialize(Value::Object(rest))
                    .map_err(|e| de::Error::custom(format!("server `{name}`: {e}")))?;
                Ok(Named { name, server })
            }
        }
        d.deserialize_map(Entry)
    }
}

/// Turns the list form of a file's `mcpServers` into the object form, in place. A file's
/// typed check has run before this, so an entry without a string `name` cannot reach here;
/// such an entry is left out rather than guessed at.
pub(crate) fn normalise(file: &mut Map<String, Value>) {
    let Some(Value::Array(list)) = file.get_mut(KEY) else {
        return;
    };
    let mut servers = Map::new();
    for entry in std::mem::take(list) {
        if let Value::Object(mut entry) = entry
            && let Some(Value::String(name)) = entry.remove("name")
        {
            servers.insert(name, Value::Object(entry));
        }
    }
    file.insert(KEY.to_string(), Value::Object(servers));
}

/// The published schema of `mcpServers`: the object form, or the list form.
pub(crate) fn schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let object = generator.subschema_for::<BTreeMap<ServerName, UpstreamServer>>();
    schemars::json_schema!({
        "anyOf": [
            object,
            {
                "type": "array",
                "description": "The same servers as a list, each with its `name` (normalised to the object form when read).",
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}},
                    "description": "A server's fields, as in the object form, plus `name`.",
                },
            },
        ],
    })
}
