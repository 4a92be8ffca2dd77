# Model and GPU catalogs, installed to $(pkgdatadir) and distributed
# (docs/catalog.md).  kvsim finds them at $KVSIM_DATADIR, else here.
dist_pkgdata_DATA = %reldir%/models.yaml %reldir%/gpus.yaml
# The embedded default of `kvsim run`: an excerpt of the Azure LLM
# conversation trace, CC-BY-4.0 (data/TRACES.md has the attribution).
dist_pkgdata_DATA += %reldir%/azure_llm_2023_conv_excerpt.csv \
	%reldir%/LICENSE-AzurePublicDataset-CC-BY-4.0.txt %reldir%/TRACES.md
# The H200 copy-term calibration (docs/cost-model.md 5.2), installed for
# cost.calibration, and the device check's output it was fitted from
# (docs/gpu.md 5; distributed for tests/calibrate.sh, not installed).
dist_pkgdata_DATA += %reldir%/costmodel-h200.yaml
EXTRA_DIST += %reldir%/device
# The step-time and API-server calibration fitted to measured vLLM 0.15.1
# servers on H100 SXM (docs/cost-model.md 5.6, docs/ACCURACY.md); kvsim
# run takes it for h100-sxm and vLLM 0.15 when cost.calibration is unset.
dist_pkgdata_DATA += %reldir%/calib-h100-sxm-vllm-0.15.yaml
# The interconnects of disaggregated runs (docs/pd.md).
dist_pkgdata_DATA += %reldir%/links.yaml

# The KV tier catalog (cpu-dram, local-nvme, remote-store) of KV offload
# (docs/catalog.md "KV tiers").
dist_pkgdata_DATA += %reldir%/tiers.yaml
