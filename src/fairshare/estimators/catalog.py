"""Every declared method, in the order ``fairshare methods`` lists them; imported by the registry."""

from ..registry import register
from . import exact_method, leave_one_out, montecarlo, regression, sgd

for _spec in exact_method.SPECS + montecarlo.SPECS[:2] + regression.SPECS + montecarlo.SPECS[2:] + sgd.SPECS + leave_one_out.SPECS:
    register(_spec)
