/*
 * kvcore_installed.c -- `make installcheck`: a program built against the
 * installed <kvcore.h> and -lkvcore (the shared library) prints the name
 * of vLLM v1's mode.
 */
#include <kvcore.h>
#include <stdio.h>

int
main(void)
{
	struct kvc_config c;

	kvc_config_default(&c, KVC_VLLM_V1);
	printf("%s\n", kvc_mode_name(c.mode));
	return 0;
}
