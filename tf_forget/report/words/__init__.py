"""The report's fixed wording: every sentence the page, report.json and the summaries say in
the same words, and the helpers that build them, one module per topic.

* `quantities`: rates, counts, points and sizes as text;
* `naming`: class and op labels;
* `header`: the audited data and files for the page's title and header;
* `folding`: repeated notes and caveats folded into one line;
* `verdict_sentences`: the verdict's sentences (the recommended file, caveats, the K = 1 design);
* `why_forgot`: why a compressed file forgot, in rows and in words;
* `paragraphs`: the sections' fixed paragraphs and the glossary;
* `summaries`: the terminal and Markdown summaries' fixed lines.

The gates' reasons and the ship rule's sentences are the policy's (`tf_forget.policy.gates`,
`ship_rule`: below the report, which cannot be imported there).
"""
