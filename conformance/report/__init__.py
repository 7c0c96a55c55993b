"""What a run shows people: the HTML report (`build`: index.html; `crosslib`: crosslib.html; `figures` and
`pictures`: a finding's pictures; `charts`: timings), `merge` of runs from several machines, and the
terminal: the one-screen section at the end of a run (`terminal`, `table`)."""
