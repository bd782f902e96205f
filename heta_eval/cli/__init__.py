"""The console scripts, one module each: `main` (heta-eval), `prepare` (heta-eval-prepare),
`compare` (heta-eval-compare), `runs` (heta-eval-runs), `sync` (heta-eval-sync); `info` and
`console` are what `heta-eval` prints. Each parses, calls the library, prints and sets the
exit code; none holds evaluation logic."""
