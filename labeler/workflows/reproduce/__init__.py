"""`labeler reproduce`: each source's experiments in one resumable run, as it ran.

`utility_paper` runs the utility paper's experiments (its steps in `utility_steps`, its
dry-run plan in `utility_plan`, its report in `utility_report` and `utility_cells`);
`rubric_experiment` the bag-of-decisions experiment (its steps in `rubric_steps`, its report
in `rubric_report`); `seer_paper` SEER's Table 1 (its steps in `seer_steps`, its report in
`seer_report`); `steps` holds what they share.
"""
