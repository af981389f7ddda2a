//! Delta debugging (Zeller and Hildebrandt's ddmin) over a list: the smallest subset it can find
//! for which a test still holds, 1-minimal (dropping any one element makes the test fail).
//! Triage runs it on a finding's edit list before any text reduction (Hermes §5.4).

use anyhow::Result;
use std::collections::HashMap;

/// Returns a 1-minimal sublist of `items` (order kept) on which `test` holds, assuming it holds
/// on all of `items`. Every distinct subset is tested at most once, the empty one first: a
/// symptom that needs no element at all costs a single test.
pub fn ddmin<T: Clone>(items: &[T], mut test: impl FnMut(&[T]) -> Result<bool>) -> Result<Vec<T>> {
    let mut cache: HashMap<Vec<usize>, bool> = HashMap::new();
    let mut check = |subset: &[usize]| -> Result<bool> {
        if let Some(&known) = cache.get(subset) {
            return Ok(known);
        }
        let chosen: Vec<T> = subset.iter().map(|&i| items[i].clone()).collect();
        let verdict = test(&chosen)?;
        cache.insert(subset.to_vec(), verdict);
        Ok(verdict)
    };
    let mut current: Vec<usize> = (0..items.len()).collect();
    if current.is_empty() || check(&[])? {
        return Ok(Vec::new());
    }
    let mut granularity = 2;
    while current.len() >= 2 {
        let chunks = split(&current, granularity);
        let mut reduced = false;
        for chunk in &chunks {
            if check(chunk)? {
                current = chunk.clone();
                granularity = 2;
                reduced = true;
                break;
            }
        }
        if !reduced && chunks.len() > 2 {
            for skipped in 0..chunks.len() {
                let complement: Vec<usize> = chunks
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != skipped)
                    .flat_map(|(_, c)| c.iter().copied())
                    .collect();
                if check(&complement)? {
                    current = complement;
                    granularity = (granularity - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if granularity >= current.len() {
                break;
            }
            granularity = (granularity * 2).min(current.len());
        }
    }
    Ok(current.iter().map(|&i| items[i].clone()).collect())
}

/// `n` contiguous chunks of nearly equal size.
fn split(items: &[usize], n: usize) -> Vec<Vec<usize>> {
    let n = n.min(items.len()).max(1);
    let (size, extra) = (items.len() / n, items.len() % n);
    let mut chunks = Vec::with_capacity(n);
    let mut start = 0;
    for i in 0..n {
        let len = size + usize::from(i < extra);
        chunks.push(items[start..start + len].to_vec());
        start += len;
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Runs ddmin and checks what every run must satisfy: no subset tested twice, and a
    /// 1-minimal result on which the test holds.
    fn minimize(items: &[u32], holds: impl Fn(&[u32]) -> bool) -> (Vec<u32>, usize) {
        let mut tested: Vec<Vec<u32>> = Vec::new();
        let result = ddmin(items, |subset| {
            tested.push(subset.to_vec());
            Ok(holds(subset))
        })
        .unwrap();
        let distinct: HashSet<&Vec<u32>> = tested.iter().collect();
        assert_eq!(distinct.len(), tested.len(), "a subset was tested twice: {tested:?}");
        assert!(holds(&result), "the result {result:?} does not show the symptom");
        for drop in 0..result.len() {
            let mut smaller = result.clone();
            smaller.remove(drop);
            assert!(!holds(&smaller), "{result:?} is not 1-minimal: {smaller:?} also holds");
        }
        (result, tested.len())
    }

    #[test]
    fn finds_the_two_elements_that_matter_among_a_hundred() {
        let items: Vec<u32> = (0..100).collect();
        let (result, tests) = minimize(&items, |s| s.contains(&17) && s.contains(&83));
        assert_eq!(result, vec![17, 83]);
        // Logarithmic in the list length, far from the 2^100 subsets.
        assert!(tests < 60, "{tests} tests");
    }

    #[test]
    fn keeps_order_and_interacting_pairs() {
        // Either pair alone shows the symptom: ddmin must return one whole pair, not one
        // element of each.
        let items: Vec<u32> = (0..16).collect();
        let (result, _) = minimize(&items, |s| {
            (s.contains(&2) && s.contains(&13)) || (s.contains(&5) && s.contains(&6))
        });
        assert!(result == vec![2, 13] || result == vec![5, 6], "{result:?}");
    }

    #[test]
    fn every_element_may_be_needed() {
        let items: Vec<u32> = (0..9).collect();
        let (result, _) = minimize(&items, |s| s.len() == 9);
        assert_eq!(result, items);
    }

    #[test]
    fn an_empty_result_costs_one_test() {
        let items: Vec<u32> = (0..50).collect();
        let (result, tests) = minimize(&items, |_| true);
        assert!(result.is_empty());
        assert_eq!(tests, 1);
    }

    #[test]
    fn the_empty_set_is_tested_once() {
        let items: Vec<u32> = (0..8).collect();
        let mut empty_tests = 0;
        let result = ddmin(&items, |s| {
            empty_tests += usize::from(s.is_empty());
            Ok(s.contains(&3))
        })
        .unwrap();
        assert_eq!(result, vec![3]);
        assert_eq!(empty_tests, 1);
    }

    #[test]
    fn non_monotone_symptoms_still_give_a_1_minimal_subset() {
        // Element 4 alone hides the symptom that 1 shows; with 7 it shows again.
        let items: Vec<u32> = (0..10).collect();
        let (result, _) = minimize(&items, |s| s.contains(&1) && (!s.contains(&4) || s.contains(&7)));
        assert_eq!(result, vec![1]);
    }

    #[test]
    fn errors_of_the_test_stop_the_search() {
        let items: Vec<u32> = (0..4).collect();
        let result = ddmin(&items, |s| {
            if s.len() == 2 {
                anyhow::bail!("compiler vanished")
            } else {
                Ok(false)
            }
        });
        assert!(result.unwrap_err().to_string().contains("vanished"));
    }
}
