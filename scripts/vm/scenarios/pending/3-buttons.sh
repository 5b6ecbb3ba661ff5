# Scenario 3, buttons (PENDING: needs the GPIO button reader and volume/mute in `crier run`).
# Plan (helpers exist): config with the buttons on gpiochip0 lines GPIO17/GPIO27/... (names,
# active-low, pulled up by guest-lib); baseline: order → capture → RMS (lib/speechcheck.py);
# press GPIO27 three times: gpio_pull 27 pull-down; sleep 0.2; gpio_pull 27 pull-up; then the
# next order's captured RMS must be lower by 3 configured steps (dB → ratio, ±1 dB);
# mute: the keep-alive stays silent and the order follows the mute policy; hold (pull-down for
# > hold time) → repeat of the last alert, seen as a second burst of speech in the capture.
fail "TODO: scenario 3 not written yet"
