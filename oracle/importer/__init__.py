"""``oracle import-model``: a PyTorch module or an ONNX file -> an oracle model file.

- :mod:`oracle.importer.sources` resolves ``torchvision:NAME``, ``timm:NAME``,
  ``FILE.py:CALLABLE`` and ``package.module:CALLABLE`` to a module (torch needed);
- :mod:`oracle.importer.fx` traces a module with torch.fx and maps each operation that
  costs or changes a shape to one oracle layer (:data:`~oracle.importer.fx.MODULE_RULES`,
  :data:`~oracle.importer.fx.FUNCTION_RULES`);
- :mod:`oracle.importer.onnx` does the same for an ONNX graph (the onnx package);
- :mod:`oracle.importer.write` checks the layers with oracle's own shape inference and
  writes the YAML (docs/model-format.md).

Nothing heavy is imported here: torch and onnx are optional extras (``oracle[torch]``,
``oracle[onnx]``)."""
