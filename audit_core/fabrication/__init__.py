"""Fabricated members (docs/methods.md §3): can non-members be dressed up as members, and does the audit notice?

One concept a module:

- data: ``images`` (ImageData, validation, the membership split), ``image_files`` (.npz and PNG
  folders, sizes checked before reading), ``bundled`` (digits, MNIST), ``uploads`` (the user's
  files with their SHA-256 for the report);
- models: ``architectures`` (small CNN, ResNet-18, recognised by their weights), ``model_files``
  (safetensors, trusted TorchScript), ``training`` (M models as one batch), ``inference``
  (logits in batches), ``threads`` (one torch thread on a CPU);
- the method: ``gradients`` (input-gradient norms, confidences), ``attacks`` (MFA, I-PGD, I-CW,
  adaptive), ``references`` (offline reference models), ``mia`` (LOSS / LiRA / RMIA scores,
  the AR-MIA weight), ``metrics`` (AUC, TPR at low FPR);
- the audit: ``setup`` (everything trained before an attack), ``audit`` (:func:`~audit_core.fabrication.audit.run_fabrication`),
  ``sweeps`` (regime map, attack comparison, adaptive attacker), ``result`` (FabricationResult
  and its ``--json``), ``progress``;
- the registry entry and its views: ``choices``, ``spec``, ``figures``, ``verdict``.
"""

__all__: list[str] = []
