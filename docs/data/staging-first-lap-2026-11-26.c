#include <rq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static volatile uint64_t got;
static volatile uint64_t sink;
static void on_data(rq_ctx_t *c, const rq_msg_t *m, void *a){(void)c;(void)a;const volatile char*p=m->data;uint64_t x=0;for(size_t i=0;i<m->len;i+=64)x+=p[i];sink+=x;got++;}
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){rq_ctx_t*ctx;rq_init(&argc,&argv,&ctx);size_t len=atol(argv[1]);int path=argv[2][0]=='l';int n=atoi(argv[3]);
rq_handler_register(ctx,1,on_data,NULL,0);char*buf=malloc(len);memset(buf,1,len);rq_barrier(ctx);
if(rq_rank(ctx)==0){for(int lap=0;lap<4;lap++){double t0=now();for(int i=0;i<n;i++){uint64_t a=i; if(path) rq_request_long(ctx,1,1,&a,1,buf,len,(uint64_t)(i%16)*((len+63)&~63ull),0); else rq_request(ctx,1,1,&a,1,buf,len,0);} rq_barrier(ctx); double t=now()-t0; printf("%s len %zu lap %d: %.4f ns/B\n",path?"long":"medium",len,lap,t*1e9/(n*(double)len));}}
else {for(int lap=0;lap<4;lap++) rq_barrier(ctx);}
rq_finalize(ctx);}
