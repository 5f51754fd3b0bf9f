//! The summary of a series (`cauda analyze --json`, also embedded in run
//! files). Values are integer nanoseconds except `mean` and `stddev`;
//! percentile keys are the percentile without trailing zeros ("99.9").

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Percentiles in the order asked for, serialized as a JSON object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Percentiles(pub Vec<(String, u64)>);

impl Percentiles {
    /// The value of a percentile by its key (`"99.9"`).
    pub fn get(&self, key: &str) -> Option<u64> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

impl Serialize for Percentiles {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Percentiles {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
        let mut out = Vec::with_capacity(map.len());
        for (key, value) in map {
            let value = value.as_u64().ok_or_else(|| {
                serde::de::Error::custom(format!("percentile {key} is not an integer"))
            })?;
            out.push((key, value));
        }
        Ok(Percentiles(out))
    }
}

/// A series' summary, the BRIEF's stable shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Always `ns`.
    pub unit: String,
    /// Exact number of values.
    pub count: u64,
    /// Exact smallest value.
    pub min: u64,
    /// Exact largest value.
    pub max: u64,
    /// Exact mean (sum / count), to 0.1 ns.
    pub mean: f64,
    /// Standard deviation from the histogram, to 0.1 ns. Meaningless on fat
    /// tails: read `mad` beside it.
    pub stddev: f64,
    /// The median (the 50th percentile).
    pub median: u64,
    /// Median absolute deviation from the median (`null` for percentiles-only sources).
    pub mad: Option<u64>,
    /// The requested percentiles.
    pub percentiles: Percentiles,
    /// Values above one hour, clamped in the histogram (absent when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clamped: Option<u64>,
}
