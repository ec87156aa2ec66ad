//! Graph text for branches joined by a tree of `add`s (the schedule tests and the
//! streams bench build their wide graphs with it).

/// Appends to `src` a balanced tree of `add`s that joins the values `outs`
/// pairwise (`j0 = add(a, b)`, `j1`, … level by level, an odd one out passed up),
/// and an `output` line for the root.
///
/// ```
/// let mut src = String::from("input x: f32[4]\na = exp(x)\nb = sin(x)\nc = cos(x)\n");
/// uop_graph::random::join_with_adds(&mut src, ["a", "b", "c"].map(String::from).to_vec());
/// assert!(src.ends_with("j0 = add(a, b)\nj1 = add(j0, c)\noutput j1\n"));
/// ```
pub fn join_with_adds(src: &mut String, mut outs: Vec<String>) {
    let mut k = 0;
    while outs.len() > 1 {
        let mut next = Vec::new();
        for pair in outs.chunks(2) {
            if let [a, b] = pair {
                src.push_str(&format!("j{k} = add({a}, {b})\n"));
                next.push(format!("j{k}"));
                k += 1;
            } else {
                next.push(pair[0].clone());
            }
        }
        outs = next;
    }
    if let Some(root) = outs.first() {
        src.push_str(&format!("output {root}\n"));
    }
}
