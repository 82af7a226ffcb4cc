"""Models kiln was not tuned on, for `bench_gpu.py --models heldout`.

Issue 16 says kiln "will also be measured on models and shapes it was not
tuned on": these are whole torchvision classifiers, timm-free, at full size
(the CI test models are small copies of some of them), other input sizes
and batches of the bench's own models, longer sequences, and Hugging Face
encoders and decoders built from their configs (no download: weights are
seeded like the bench's). Each builder takes a seed and returns (model,
inputs); bench_gpu.py exports, compiles, runs and checks them against
PyTorch like its own models.
"""
import torch

import bench_gpu


def _vision(name, batch=1, size=224, **kwargs):
    def build(seed):
        import torchvision
        model = bench_gpu.seeded(getattr(torchvision.models, name)(weights=None, **kwargs), seed)
        x = torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(seed + 1))
        return model, (x,)
    return build


def _encoder(seq, batch=1, width=768, heads=12, layers=12):
    def build(seed):
        layer = torch.nn.TransformerEncoderLayer(width, heads, 4 * width, activation="gelu",
                                                 batch_first=True, dropout=0.0, norm_first=True)
        model = bench_gpu.seeded(
            torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False), seed)
        x = torch.randn(batch, seq, width, generator=torch.Generator().manual_seed(seed + 1))
        return model, (x,)
    return build


class _HiddenState(torch.nn.Module):
    """A Hugging Face model's last hidden state as a plain tensor output,
    from token ids or (`argument`) another input such as pixel_values."""

    def __init__(self, model, argument="input_ids"):
        super().__init__()
        self.model = model
        self.argument = argument

    def forward(self, x):
        return self.model(**{self.argument: x}).last_hidden_state


def _hf(config_name, model_name, seq, vocab_limit=1000, **config):
    def build(seed):
        import transformers
        cfg = getattr(transformers, config_name)(**config)
        cfg._attn_implementation = "eager"  # the exporter traces plain ops
        model = bench_gpu.seeded(_HiddenState(getattr(transformers, model_name)(cfg)), seed)
        ids = torch.randint(0, vocab_limit, (1, seq),
                            generator=torch.Generator().manual_seed(seed + 1))
        return model, (ids,)
    return build


def _hf_input(config_name, model_name, shape, argument, **config):
    """A Hugging Face model fed a float tensor (pixels, audio)."""
    def build(seed):
        import transformers
        cfg = getattr(transformers, config_name)(**config)
        cfg._attn_implementation = "eager"
        model = bench_gpu.seeded(
            _HiddenState(getattr(transformers, model_name)(cfg), argument), seed)
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed + 1))
        return model, (x,)
    return build


class _Logits(torch.nn.Module):
    """A timm model's output (logits or features) as one tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        y = self.model(x)
        return y[-1] if isinstance(y, (list, tuple)) else y


def _timm(name, size=224):
    def build(seed):
        import timm
        model = bench_gpu.seeded(_Logits(timm.create_model(name, pretrained=False)), seed)
        x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(seed + 1))
        return model, (x,)
    return build


_SMALL_DECODER = dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=6,
                      num_attention_heads=12, vocab_size=32000)


HELDOUT = {
    "resnext50_32x4d": _vision("resnext50_32x4d"),
    "wide_resnet50_2": _vision("wide_resnet50_2"),
    "resnet152": _vision("resnet152"),
    "densenet121": _vision("densenet121"),
    "regnet_y_1_6gf": _vision("regnet_y_1_6gf"),
    "convnext_tiny": _vision("convnext_tiny"),
    "swin_t": _vision("swin_t"),
    "maxvit_t": _vision("maxvit_t"),
    "vit_b_32": _vision("vit_b_32"),
    "mobilenet_v3_large": _vision("mobilenet_v3_large"),
    "shufflenet_v2_x1_0": _vision("shufflenet_v2_x1_0"),
    "squeezenet1_1": _vision("squeezenet1_1"),
    "googlenet": _vision("googlenet", aux_logits=False, init_weights=False),
    "inception_v3_299": _vision("inception_v3", size=299, aux_logits=False, init_weights=False),
    "efficientnet_v2_s": _vision("efficientnet_v2_s", size=384),
    "mnasnet1_0": _vision("mnasnet1_0"),
    "vgg16": _vision("vgg16"),
    "alexnet": _vision("alexnet"),
    "resnet50_320_batch4": _vision("resnet50", batch=4, size=320),
    "mobilenet_v2_512": _vision("mobilenet_v2", size=512),
    "efficientnet_b0_batch8": _vision("efficientnet_b0", batch=8),
    "encoder_prenorm_seq512": _encoder(512),
    "encoder_prenorm_seq77_batch3": _encoder(77, batch=3, width=512, heads=8, layers=6),
    "hf_bert_seq384": _hf("BertConfig", "BertModel", 384),
    "hf_gpt2_seq256": _hf("GPT2Config", "GPT2Model", 256),
    "hf_distilbert_seq200": _hf("DistilBertConfig", "DistilBertModel", 200),
    # Second batch (session 21): more families, each a different ONNX shape
    # of the same ops (relative position tables, RoPE, RMSNorm, gated MLPs,
    # shared layers, conv feature extractors, token mixers).
    "timm_deit_small": _timm("deit_small_patch16_224"),
    "timm_beit_base": _timm("beit_base_patch16_224"),
    "timm_mixer_b16": _timm("mixer_b16_224"),
    "timm_poolformer_s12": _timm("poolformer_s12"),
    "timm_levit_128s": _timm("levit_128s"),
    "timm_mobilevit_s": _timm("mobilevit_s", size=256),
    "timm_ghostnet_100": _timm("ghostnet_100"),
    "timm_xception41": _timm("xception41", size=299),
    "timm_regnety_040": _timm("regnety_040"),
    "timm_repvgg_a2": _timm("repvgg_a2"),
    "timm_edgenext_small": _timm("edgenext_small", size=256),
    "timm_efficientformer_l1": _timm("efficientformer_l1"),
    "timm_nfnet_l0": _timm("nfnet_l0"),
    "timm_resnetv2_50x1_bit": _timm("resnetv2_50x1_bit"),
    "timm_hrnet_w18_small": _timm("hrnet_w18_small"),
    "timm_convnextv2_nano": _timm("convnextv2_nano"),
    "hf_roberta_seq128": _hf("RobertaConfig", "RobertaModel", 128),
    "hf_albert_seq128": _hf("AlbertConfig", "AlbertModel", 128, hidden_size=768,
                            intermediate_size=3072, num_attention_heads=12),
    "hf_t5_encoder_seq128": _hf("T5Config", "T5EncoderModel", 128),
    "hf_llama_seq128": _hf("LlamaConfig", "LlamaModel", 128, **_SMALL_DECODER),
    "hf_mistral_seq128": _hf("MistralConfig", "MistralModel", 128, num_key_value_heads=4,
                             **_SMALL_DECODER),
    "hf_opt_seq128": _hf("OPTConfig", "OPTModel", 128),
    "hf_gpt_neox_seq128": _hf("GPTNeoXConfig", "GPTNeoXModel", 128, **_SMALL_DECODER),
    "hf_bloom_seq128": _hf("BloomConfig", "BloomModel", 128, hidden_size=768, n_layer=6,
                           n_head=12),
    "hf_clip_vision": _hf_input("CLIPVisionConfig", "CLIPVisionModel", (1, 3, 224, 224),
                                "pixel_values"),
    "hf_wav2vec2_1s": _hf_input("Wav2Vec2Config", "Wav2Vec2Model", (1, 16000), "input_values"),
    "hf_segformer_b0": _hf_input("SegformerConfig", "SegformerModel", (1, 3, 256, 256),
                                 "pixel_values"),
}
