//! The source of `sample-export.json`: every line marked `never runs` is
//! one that the tests below leave uncovered.

pub fn classify(n: i64) -> &'static str {
    if n >= 0 {
        "non-negative"
    } else {
        "negative" // never runs
    }
}

pub fn largest<T: PartialOrd + Copy>(items: &[T]) -> Option<T> {
    let mut best = *items.first()?;
    for &item in items {
        if item > best {
            best = item;
        }
    }
    Some(best)
}

pub fn doubled(items: &[u32]) -> Vec<u32> {
    items.iter().map(|x| x * 2).collect()
}

pub fn unused(text: &str) -> usize { // never runs
    let trimmed = text.trim(); // never runs
    trimmed.len() // never runs
} // never runs

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exercises_most_of_it() {
        assert_eq!(classify(3), "non-negative");
        assert_eq!(largest(&[1, 5, 2]), Some(5));
        assert_eq!(largest(&[0.5, 0.25]), Some(0.5));
        assert_eq!(doubled(&[1, 2]), [2, 4]);
    }
}
