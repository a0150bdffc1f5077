"""Frequency estimation under eps-LDP: the mechanisms people deploy, exactly; the optimum; gaps;
estimators from reports."""
