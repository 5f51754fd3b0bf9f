//! Label columns: each `--label` key any input carries becomes a column of
//! the tabular exports (CSV and Parquet), named by one rule.

use crate::model::Loaded;

/// The label keys any input carries (`--label`), in order.
pub fn label_keys(inputs: &[Loaded]) -> Vec<&str> {
    let keys: std::collections::BTreeSet<&str> = inputs
        .iter()
        .filter_map(|i| i.run.as_ref())
        .flat_map(|r| r.labels.keys().map(String::as_str))
        .collect();
    keys.into_iter().collect()
}

/// The column name of each label key beside an exporter's `fixed`
/// columns: the bare key, or `label_KEY` when a fixed column has that name
/// (prefixed again in the unlikely case that is taken too). CSV and
/// Parquet name label columns by this one rule.
pub fn label_columns(keys: &[&str], fixed: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(keys.len());
    for key in keys {
        let mut name = key.to_string();
        while fixed.contains(&name.as_str())
            || names.contains(&name)
            || (name != *key && keys.contains(&name.as_str()))
        {
            name.insert_str(0, "label_");
        }
        names.push(name);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_columns_keep_clear_of_fixed_ones_and_each_other() {
        let fixed = ["series", "count"];
        assert_eq!(
            label_columns(&["count", "host", "label_count"], &fixed),
            ["label_label_count", "host", "label_count"]
        );
        assert_eq!(label_columns(&["zone"], &fixed), ["zone"]);
    }
}
