"""tf_forget: audit what model compression does beyond top-line accuracy."""
