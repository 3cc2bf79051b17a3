"""Walk-forward evaluation by season: fit on the seasons before, score the season itself.

Everything the model decides (pool, rounds, the best single bookmaker) is decided on the
training seasons alone, on matches that kicked off before the test season began; every
forecast (the ensemble, the consensus, single bookmakers, base rates, Pinnacle's close) is
then scored on one set of test rows. The references always use the first de-margining
method, so that variants of the ensemble are measured against the same forecasts.
"""
