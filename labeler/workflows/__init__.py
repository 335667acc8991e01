"""The verbs: `build` (labels), `judge` (submissions), `compare` (transfer of utility labels),
`retrieve` (a TREC run) and `plan` (a dry run), with the steps they share (`steps`)."""
