# Scenario 4, mixer (PENDING: needs `audio.mixer`). Plan: crier_config "audio.mixer = hw:Dummy,Master"
# (whatever the key's syntax becomes); crier_start; record `amixer -c Dummy sget Master`;
# press volume down (gpio_pull 27 pull-down/up) and check that amixer shows Master lower by the
# configured step, and back up with volume up.
fail "TODO: scenario 4 not written yet"
