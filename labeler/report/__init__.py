"""The utility paper's report: its published numbers (`paper`), our numbers beside them in its
tables' layout (`tables`) and figures (`figures`, their cells drawn as `labeler compare`'s
heatmaps are, `heatmap`), written as the `report` artifact kind
(`kind`)."""
