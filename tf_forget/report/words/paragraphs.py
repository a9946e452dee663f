"""The sections' fixed paragraphs: what the verdict's table, the published test sets, the
output divergence and the repairs measure, and the glossary of the measures (one or two plain sentences each, with the
paper's reference).

Plain text, except `REPAIR_LEAD` (HTML: its emphasis and file names marked). Standard library
only.
"""

# The verdict's table: how its changes and intervals are made, per design (K >= 2, K = 1).
VERDICT_POPULATION_LEAD = (
  "Changes are in percentage points (pt) of the dense population's value, mean "
  "over members, with the t-based 95% interval over members: paired where "
  "member k is the same network before and after compression, Welch where the "
  "populations are trained independently."
)
VERDICT_K1_LEAD = (
  "Changes are in percentage points (pt) of the reference network's value; the top-1 "
  "interval is Newcombe's paired 95% interval over the test examples (K = 1; "
  "section 1b has the per-example tests, per class and per subgroup)."
)
VERDICT_POPULATION_TAIL = (
  " Worst class: the largest recall loss, its test examples n, the Welch p-value "
  "(000 §2.2) and the Benjamini-Hochberg adjusted one over all classes. Worst "
  "subgroup: the largest false-negative-rate increase over the protected "
  "subgroups (004 Table 3)."
)
VERDICT_K1_TAIL = (
  " Worst class: the largest recall drop, its test examples n, Newcombe's 95% interval, "
  "the exact McNemar p-value over the class's examples and the Benjamini-Hochberg "
  "adjusted one over all classes, then how many classes that test marks significant "
  "(what --max_significant_classes counts). Worst subgroup: the largest "
  "false-negative-rate increase over the protected subgroups, with its paired "
  "bootstrap 95% interval over the test examples (what --max_subgroup_fnr_increase "
  "reads)."
)
VERDICT_FILES = (
  " The file column is the one written to the deployment bundle (deploy/manifest.json)."
)

# The glossary: (term, definition) of every measure.
GLOSSARY = (
  (
    "top-1, top-1 change",
    "Share of test images whose highest-scoring class is the true "
    "one, averaged over the members of a population; the change is compressed minus dense, "
    "in percentage points (pt). 000 Table 2.",
  ),
  (
    "members, K",
    "Independently trained (or compressed) copies of a model; every number is "
    "a mean over them. The papers use K = 30 (000 §2.4); with a few members intervals are "
    "wide.",
  ),
  (
    "significant class",
    "A class whose recall, relative to each member's overall accuracy, "
    "differs between the populations in a two-tailed Welch t-test at p ≤ 0.05 (000 §2.2, "
    "docs/spec.md §3.1). No multiple-testing correction is applied by default; the BH column "
    "shows the Benjamini-Hochberg adjusted p-value.",
  ),
  (
    "PIE (#PIE)",
    "Pruning Identified Exemplar: a test image whose most frequent label over "
    "the compressed population differs from the most frequent label over the dense one "
    "(000 §2.3). #PIE counts them.",
  ),
  (
    "CIE, Taxicab distance d_T",
    "Compression Identified Exemplar: 004 ranks images by the "
    "Taxicab distance between the two populations' label counts (0 = identical votes, 2K = "
    "every member changed its vote); the top ranks are the images compression changed most "
    "(004 §3.1).",
  ),
  (
    "subgroup FNR / FPR",
    "False-negative (false-positive) rate within a subgroup of the "
    "protected attributes, e.g. Male × Young (004 Tables 3-5). Normalized difference = "
    "relative change in %, absolute = change in points.",
  ),
  (
    "α, recall distortion",
    "Slope of each class's recall balance after vs before "
    "compression; α > 1: compression widened the gaps between classes, α < 1: narrowed them. "
    "Label <, >, ? : the 99% interval lies below, above or around 1 (002 §5-6).",
  ),
  (
    "prune potential, excess error",
    "The largest pruned fraction whose error stays within "
    "0.5 points of the parent's, per test distribution; excess error = error under a "
    "distribution shift minus error on the nominal test set (003 Definitions 1-2).",
  ),
  (
    "robustness (normalized)",
    "Accuracy on corrupted images relative to the dense "
    "population's on the same corruption, 100·(A_t/A_0 − 1) % (000 Table 3).",
  ),
  (
    "KL, Δp, flip rate",
    "How far a compressed file's outputs moved from its reference's "
    "(the dense float32 file of the same network, or an independent dense member for "
    "gradual pruning), from the saved logits: KL(reference ‖ file) of the softmax outputs in "
    "nats, Δp the change of the true class's probability, flip rate the share of examples "
    "whose top-1 label changed (section 1c).",
  ),
)
GLOSSARY_SUMMARY = "The measures in one or two sentences each (click to open)"

# The published test sets' section: what its two tables hold.
IMAGENET_A_LEAD = (
  "7,500 natural adversarial images "
  "(Hendrycks et al.), ImageNet labels. Top-1 / top-5 averaged over members; normalized "
  "= 100·(A_t/A_0 − 1) against dense (docs/spec.md §3.6). classes 1000: the 1000-way argmax "
  "(the default: 000's dense top-1 of 0.89% suggests no masking); classes 200: the argmax "
  "over ImageNet-A's 200 classes only (Hendrycks' protocol, from the stored logits)."
)
PUBLISHED_SPLITS_LEAD = (
  "Accuracy on a published test set of "
  "the same classes (CIFAR-10.1: Recht et al. 2018, 003 Table 11), averaged over "
  "members; top1_change in points and top1_norm = 100·(A_t/A_0 − 1) against dense; "
  "clean_top1: the same members on the clean evaluation split."
)

# The output divergence section: what KL, Δp and a flip are.
DIVERGENCE_LEAD = (
  "KL = KL(reference ‖ file) = Σ_c p_c log(p_c / q_c) in nats, per test example, of the "
  "softmax outputs p of the reference and q of the compressed file, from the saved "
  "logits: 0 when the file's output distribution is the reference's, whatever the arg "
  "max. Δp = q_y − p_y: the change of the true class's probability (negative: the file "
  "is less sure of the right answer; its bad tail is the min, p1 and p10). A flip is an "
  "example whose top-1 label changed (broken: right → wrong, fixed: wrong → right, "
  "changed: wrong → another wrong); flip rate = flips / examples. With one member pair "
  "the 95% interval of a mean is over the test examples; with several, over the pairs' "
  "means (the member is the unit, docs/spec.md §1.3), and percentiles pool the pairs."
)

# The "why" section: what the per-layer analysis measured and how.
REPAIR_LEAD = (
  "Each full int8 file is compared with its float model on the examples it "
  "<b>forgot</b> (its top-1 differs from the float32 file's) and on the <b>stable</b> "
  "rest. First, with LiteRT's QuantizationDebugger, each int8 op's output is compared "
  "with the float op run on the same dequantized inputs (NMSE: squared error over the "
  "float tensor's power; excess = NMSE(forgotten) − NMSE(stable)). Then the ops of "
  "largest error and the ops that write or read a tensor where one channel dominates "
  "the int8 range (which the NMSE cannot see; <b>picked_by</b>: NMSE pick, range "
  "diagnosis) are tested <b>causally</b>, end to end on the forgotten examples: the "
  "file with only that op kept in float (<b>recovered</b>: broken examples it gets right "
  "again) and the file with only that op quantized (<b>caused</b>: forgotten examples it "
  "breaks by itself). Those ops are ranked by that effect (<b>evidence</b> "
  "\"ablation\"; the ops around one wide tensor together, the op writing it first), "
  "the others after them by NMSE (<b>nmse_rank</b> keeps the error "
  "ranking). <b>fault</b> says what kind: its activation range (a channel of a tensor "
  "it writes or reads spans far more than the others, so a per-tensor int8 scale leaves "
  "the others a few levels), its own int8 weights and output, or error inherited from "
  "earlier ops. Open the int8 file in Model Explorer and add "
  "<code>layers/&lt;member&gt;/&lt;k&gt;/full_int8.model_explorer.json</code> as node "
  "data to see its graph coloured by the NMSE. A <code>.tflite</code> file you brought "
  "has no float model to quantize again: it is run beside the float32 file with every "
  "tensor kept, the tensors the two graphs share are matched (by name, else by position: "
  "<b>match</b>) and compared after dequantizing. That error is accumulated from the "
  "layers before, so its rows are ranked by where it grows relative to its inputs "
  "(<b>growth_db_forgotten</b>: 10 log10 of the op's output NMSE over its inputs' "
  "largest): it shows where error appears, not which op caused the forgetting, and "
  "cannot see one channel's range crowding out the others."
)
