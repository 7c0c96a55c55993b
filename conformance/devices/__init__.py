"""Where an op runs: targets (cpu, real accelerators, virtual `vcuda:N`, cpu instruction-set levels in
worker processes), the placement log, the virtual device, and calling an op on a target with whatever
happens kept as data.  Imports only `conformance.spec` below it."""
